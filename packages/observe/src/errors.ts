import { errorDetailSchema, errorFactory, ServiceError, type ErrorCatalogue } from '@vigil/platform';
import { z } from 'zod';
import type { ChainBreak } from './events/index.ts';

/** Every error the observe service answers with. Body: `{ error, status, details? }`. */
export const observeErrors = {
  validation: { status: 400, code: 'validation_error', message: 'Validation failed' },
  invalidJson: { status: 400, code: 'invalid_json', message: 'Malformed JSON body' },
  otlpUndecodable: { status: 400, code: 'invalid_otlp', message: 'The body is not an OTLP ExportTraceServiceRequest' },
  unauthorized: { status: 401, code: 'unauthorized', message: 'Missing or invalid API key' },
  forbidden: { status: 403, code: 'forbidden', message: 'The API key lacks the scope this route needs' },
  invalidStreamToken: { status: 401, code: 'unauthorized', message: 'Missing, invalid or expired stream token' },
  invalidSignature: { status: 401, code: 'invalid_signature', message: 'Invalid webhook signature' },
  routeNotFound: { status: 404, code: 'not_found', message: 'Route not found' },
  checkpointNotFound: { status: 404, code: 'not_found', message: 'No audit checkpoint (at that tree size)' },
  auditTreeSize: {
    status: 400,
    code: 'validation_error',
    message: "The tree size is beyond the audit log, before the event's leaf, or from is after to",
  },
  eventNotFound: { status: 404, code: 'not_found', message: 'Event not found' },
  auditItemNotFound: { status: 404, code: 'not_found', message: 'Event not found in the audit log' },
  sessionNotFound: { status: 404, code: 'not_found', message: 'Session not found' },
  agentNotFound: { status: 404, code: 'not_found', message: 'Agent not found' },
  keyNotFound: { status: 404, code: 'not_found', message: 'API key not found' },
  healthNoSessions: { status: 404, code: 'not_found', message: 'No sessions for the agent in the window' },
  alertRuleNotFound: { status: 404, code: 'not_found', message: 'Alert rule not found' },
  guardrailRuleNotFound: { status: 404, code: 'not_found', message: 'Guardrail rule not found' },
  guardrailRuleLimit: { status: 409, code: 'limit_exceeded', message: 'At most 500 guardrail rules may exist; delete one first' },
  benchmarkNotFound: { status: 404, code: 'not_found', message: 'Benchmark not found' },
  benchmarkDraft: {
    status: 400,
    code: 'benchmark_draft',
    message: 'The benchmark is still a draft: set its status to running to see results',
  },
  chainBroken: {
    status: 409,
    code: 'chain_broken',
    message: "The session's hash chain is broken: no verdict is appended to it",
  },
  idempotencyInFlight: {
    status: 409,
    code: 'idempotency_in_flight',
    message: 'A request with this Idempotency-Key is still being stored; retry after Retry-After seconds',
  },
  idempotencyKeyReused: {
    status: 422,
    code: 'idempotency_key_reused',
    message: 'This Idempotency-Key was used with a different request body in the last 24 hours',
  },
  lastKeyExposed: {
    status: 409,
    code: 'last_key',
    message:
      'This is the last active API key and observe listens beyond this machine: revoking it would let anyone who reaches the port create an admin key without credentials. Create another key first, or add ?force=true',
  },
  benchmarkConflict: { status: 409, code: 'conflict', message: 'The benchmark cannot make this change in its current status' },
  invalidServiceToken: { status: 401, code: 'unauthorized', message: 'Missing or invalid service token' },
  evaluatorNotFound: { status: 404, code: 'not_found', message: 'Evaluator not found' },
  datasetNotFound: { status: 404, code: 'not_found', message: 'Dataset not found' },
  evalRunNotFound: { status: 404, code: 'not_found', message: 'Evaluation run not found' },
  judgeModelUnpriced: { status: 400, code: 'unpriced_model', message: 'The judge model has no price in the price table' },
  judgeFailed: { status: 502, code: 'bad_gateway', message: 'The judge model did not answer with a valid verdict' },
  judgeNotConfigured: { status: 503, code: 'judge_not_configured', message: 'The LLM judge is not configured: set LLM_PROVIDER and LLM_API_KEY' },
  serviceTokenNotConfigured: {
    status: 503,
    code: 'service_token_not_configured',
    message: 'Service-to-service calls are not configured: set INTERNAL_SERVICE_TOKEN',
  },
  lessonsRemoved: {
    status: 404,
    code: 'not_found',
    message: 'Lessons and community sharing were removed in 0.12.0; use the memory integration (/api/memory/*)',
  },
  memoryDisabled: {
    status: 404,
    code: 'not_found',
    message: 'The memory integration is disabled (set MEMORY_ENABLED=true and MEMORY_API_URL)',
  },
  payloadTooLarge: { status: 413, code: 'payload_too_large', message: 'Request body too large' },
  unsupportedMediaType: { status: 415, code: 'unsupported_media_type', message: 'Content-Type must be application/json' },
  internal: { status: 500, code: 'internal', message: 'Internal server error' },
  storage: { status: 500, code: 'storage_error', message: 'Storage error' },
  webhookSecretMissing: { status: 500, code: 'webhook_secret_not_configured', message: 'Webhook secret not configured for the source' },
  embeddingBackend: { status: 500, code: 'embedding_error', message: 'Embedding backend error: the text could not be embedded' },
  healthWeightsFixed: { status: 501, code: 'not_implemented', message: 'Health weights are not customizable' },
  memoryUnreachable: { status: 502, code: 'bad_gateway', message: 'The memory server did not answer' },
  streamLimit: {
    status: 503,
    code: 'too_many_streams',
    message: 'This instance serves as many event streams as it may (STREAM_MAX_CONNECTIONS); retry shortly',
  },
  unavailable: { status: 503, code: 'unavailable', message: 'The database is unavailable; retry shortly' },
} satisfies ErrorCatalogue<string>;

export type ObserveErrorKey = keyof typeof observeErrors;

export const observeError = errorFactory<ObserveErrorKey>(observeErrors);

/** A body that failed a check after the route's own validation (e.g. a PUT whose merged result is invalid). */
export function bodyValidationError(issues: readonly { path: PropertyKey[]; message: string }[]): ServiceError {
  const details = issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message }));
  const summary = details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message)).join('; ');
  return observeError('validation', `Validation failed in body: ${summary}`, details);
}

/** 409 for a verdict refused because its session's chain does not verify, naming the broken step. */
export function chainBrokenError(sessionId: string, brokenAt: ChainBreak): ServiceError {
  const step = `seq ${brokenAt.seq}${brokenAt.eventId === null ? '' : ` (event ${brokenAt.eventId})`}`;
  return observeError(
    'chainBroken',
    `The hash chain of session ${JSON.stringify(sessionId)} is broken at ${step}: ${brokenAt.reason}; no verdict is appended to a broken chain`,
    [{ path: 'brokenAt', message: `${step}: ${brokenAt.reason}` }],
  );
}

/** The observe error body; every error response of the OpenAPI document refers to it. */
export const observeErrorSchema = z
  .object({
    error: z.string().meta({ description: 'What went wrong, for a person to read' }),
    status: z.number().int().meta({ description: 'The HTTP status, repeated' }),
    details: z.array(errorDetailSchema).optional(),
  })
  .meta({ id: 'ObserveError' });

export function renderObserveError(error: ServiceError): z.infer<typeof observeErrorSchema> {
  return error.details && error.details.length > 0
    ? { error: error.message, status: error.status, details: error.details }
    : { error: error.message, status: error.status };
}
