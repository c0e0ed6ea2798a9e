import { errorDetailSchema, errorFactory, kitErrors, notFound, ServiceError, type ErrorCatalogue } from '@vigil/platform';
import { z } from 'zod';
import type { ChainBreak } from './events/index.ts';

/**
 * Every error the observe service answers with, each with its own code (errors.test.ts checks that
 * and docs/reference/errors.md lists them). Body: `{ error, code, status, details? }`.
 */
export const observeErrors = {
  ...kitErrors({
    unauthorized: { when: 'No API key, or one that is unknown or revoked; also the first-key bootstrap once a key exists' },
    unavailable: { message: 'The database is unavailable; retry shortly' },
  }),
  otlpUndecodable: {
    status: 400,
    code: 'invalid_otlp',
    message: 'The body is not an OTLP ExportTraceServiceRequest',
    when: 'POST /v1/traces gets a body that does not decode as an OTLP export request (protobuf, JSON or gzip)',
  },
  invalidStreamToken: {
    status: 401,
    code: 'stream_token_invalid',
    message: 'Missing, invalid or expired stream token',
    when: 'GET /api/stream with a `?token=` that is unknown or expired',
  },
  invalidSignature: {
    status: 401,
    code: 'invalid_signature',
    message: 'Invalid webhook signature',
    when: 'An inbound webhook whose X-Webhook-Signature is missing or does not match its source secret',
  },
  evidenceReadFailed: {
    status: 502,
    code: 'evidence_read_failed',
    message: 'A service did not answer a read the evidence pack needs',
    when: "POST /api/audit/evidence-pack: observe or the gate (at GATE_URL, with the X-Vigil-Gate-Authorization credential) refused or failed one of the pack's reads; the message names the read and its answer",
  },
  checkpointNotFound: {
    status: 404,
    code: 'checkpoint_not_found',
    message: 'No audit checkpoint (at that tree size)',
    when: 'No signed audit checkpoint exists yet, or none at the tree size asked for',
  },
  auditLogIncomplete: {
    status: 409,
    code: 'audit_log_incomplete',
    message: 'The audit log is missing rows a root or proof needs',
    when: 'A root or proof (a checkpoint, consistency or inclusion proof, an export) needs audit log rows that were deleted behind the service; the message names the leaf or stored node',
  },
  auditTreeSize: {
    status: 400,
    code: 'audit_tree_size_invalid',
    message: "The tree size is beyond the audit log, before the event's leaf, or from is after to",
    when: 'An audit proof asks for a tree size beyond the log, before the leaf, or a range whose from is after its to',
  },
  auditTileNotFound: {
    status: 404,
    code: 'audit_tile_not_found',
    message: 'No such tile of the audit log',
    when: 'GET /api/audit/tlog/tile/… names no hash tile (tlog-tiles spelling: <L>/<N>[.p/<W>]; no entry bundles are served) or a tile beyond the latest checkpoint',
  },
  auditCosignatureInvalid: {
    status: 422,
    code: 'audit_cosignature_invalid',
    message: 'The cosigned checkpoint was refused',
    when: 'POST /api/audit/tlog/cosignatures: the note is not a checkpoint the log signed, or a signature line is not a valid cosignature of a configured witness (AUDIT_COSIGNERS); the message says which',
  },
  eventNotFound: notFound('event_not_found', 'event'),
  llmCallNotFound: notFound('llm_call_not_found', 'LLM call'),
  auditItemNotFound: { status: 404, code: 'audit_item_not_found', message: 'Event not found in the audit log', when: 'The event has no leaf in the audit log' },
  sessionNotFound: notFound('session_not_found', 'session'),
  agentNotFound: notFound('agent_not_found', 'agent'),
  keyNotFound: notFound('key_not_found', 'API key'),
  healthNoSessions: {
    status: 404,
    code: 'health_no_sessions',
    message: 'No sessions for the agent in the window',
    when: 'The agent has no session in the health window',
  },
  alertRuleNotFound: notFound('alert_rule_not_found', 'alert rule'),
  redactionRuleNotFound: notFound('redaction_rule_not_found', 'redaction rule'),
  legalHoldNotFound: notFound('legal_hold_not_found', 'legal hold'),
  erasureNotFound: notFound('erasure_not_found', 'erasure'),
  subjectNotFound: {
    status: 404,
    code: 'subject_not_found',
    message: 'No stored event names this data subject',
    when: 'DELETE /api/subjects/:id of a subject no event names at SUBJECT_PATHS (or one erased already; events stored before the subject index existed are in it once its backfill is done)',
  },
  legalHold: {
    status: 409,
    code: 'legal_hold',
    message: 'A legal hold blocks this',
    when: 'An erasure (DELETE /api/subjects/:id) of data a legal hold in force covers (its subject, one of its sessions or their agents); the message names the hold, the details list every hold that applies',
  },
  legalHoldReleased: {
    status: 409,
    code: 'legal_hold_released',
    message: 'The legal hold was released already',
    when: 'POST /api/holds/:id/release of a hold that is no longer in force',
  },
  retentionBelowFloor: {
    status: 422,
    code: 'retention_below_floor',
    message: 'The retention period is below the configured floor (RETENTION_FLOOR_DAYS)',
    when: 'PUT /api/config sets `retentionDays` above 0 but below RETENTION_FLOOR_DAYS; the message names the floor',
  },
  redactionFailed: {
    status: 422,
    code: 'redaction_failed',
    message: 'A redaction rule failed on an event; nothing of the batch was stored',
    when: 'A redaction rule threw on an event, or left its payload no longer matching its event type (e.g. a path rule replacing a number); the details name the event and the rule',
  },
  redactionFieldReserved: {
    status: 400,
    code: 'redaction_field_reserved',
    message: 'metadata.redactions is written by the server only',
    when: 'An ingested event sets `metadata.redactions`, where the server records which redaction rules fired',
  },
  guardrailRuleNotFound: notFound('guardrail_rule_not_found', 'guardrail rule'),
  guardrailRuleLimit: {
    status: 409,
    code: 'limit_exceeded',
    message: 'At most 500 guardrail rules may exist; delete one first',
    when: 'Creating a guardrail rule when 500 exist',
  },
  benchmarkNotFound: notFound('benchmark_not_found', 'benchmark'),
  benchmarkDraft: {
    status: 400,
    code: 'benchmark_draft',
    message: 'The benchmark is still a draft: set its status to running to see results',
    when: 'Results of a benchmark still in draft',
  },
  chainBroken: {
    status: 409,
    code: 'chain_broken',
    message: "The session's hash chain is broken: no verdict is appended to it",
    when: 'An evaluation verdict for a session whose hash chain does not verify',
  },
  idempotencyInFlight: {
    status: 409,
    code: 'idempotency_in_flight',
    message: 'A request with this Idempotency-Key is still being stored; retry after Retry-After seconds',
    when: 'POST /api/events with an Idempotency-Key whose first request is still being stored (retry after Retry-After)',
  },
  idempotencyKeyReused: {
    status: 422,
    code: 'idempotency_key_reused',
    message: 'This Idempotency-Key was used with a different request body in the last 24 hours',
    when: 'POST /api/events with an Idempotency-Key used in the last 24 hours for a different body',
  },
  lastKeyExposed: {
    status: 409,
    code: 'last_key',
    message:
      'This is the last active API key and observe listens beyond this machine: revoking it would let anyone who reaches the port create an admin key without credentials. Create another key first, or add ?force=true',
    when: 'Revoking the last active key while observe listens beyond loopback, without ?force=true',
  },
  benchmarkConflict: {
    status: 409,
    code: 'benchmark_status_conflict',
    message: 'The benchmark cannot make this change in its current status',
    when: 'A benchmark status change or deletion its current status does not allow, or a variant without sessions',
  },
  invalidServiceToken: {
    status: 401,
    code: 'service_token_invalid',
    message: 'Missing or invalid service token',
    when: 'A service-to-service route called without the INTERNAL_SERVICE_TOKEN bearer',
  },
  evaluatorNotFound: notFound('evaluator_not_found', 'evaluator'),
  datasetNotFound: notFound('dataset_not_found', 'dataset'),
  evalRunNotFound: notFound('eval_run_not_found', 'evaluation run'),
  judgeModelUnpriced: {
    status: 400,
    code: 'unpriced_model',
    message: 'The judge model has no price in the price table',
    when: 'An LLM-judge evaluator names a model without a price',
  },
  judgeFailed: {
    status: 502,
    code: 'judge_failed',
    message: 'The judge model did not answer with a valid verdict',
    when: 'The LLM judge answered with no valid verdict',
  },
  judgeNotConfigured: {
    status: 503,
    code: 'judge_not_configured',
    message: 'The LLM judge is not configured: set LLM_PROVIDER and LLM_API_KEY',
    when: 'An LLM-judge evaluation while LLM_PROVIDER and LLM_API_KEY are unset',
  },
  serviceTokenNotConfigured: {
    status: 503,
    code: 'service_token_not_configured',
    message: 'Service-to-service calls are not configured: set INTERNAL_SERVICE_TOKEN',
    when: 'A service-to-service route called while INTERNAL_SERVICE_TOKEN is unset',
  },
  lessonsRemoved: {
    status: 404,
    code: 'lessons_removed',
    message: 'Lessons and community sharing were removed in 0.12.0; use the memory integration (/api/memory/*)',
    when: 'A lessons or community-sharing route (removed in 0.12.0)',
  },
  memoryDisabled: {
    status: 404,
    code: 'memory_disabled',
    message: 'The memory integration is disabled (set MEMORY_ENABLED=true and MEMORY_API_URL)',
    when: 'A memory route while the memory integration is off',
  },
  storage: { status: 500, code: 'storage_error', message: 'Storage error', when: 'The database failed on something other than being unreachable' },
  webhookSecretMissing: {
    status: 500,
    code: 'webhook_secret_not_configured',
    message: 'Webhook secret not configured for the source',
    when: 'An inbound webhook for a source whose secret is not configured',
  },
  embeddingBackend: {
    status: 500,
    code: 'embedding_error',
    message: 'Embedding backend error: the text could not be embedded',
    when: 'Recall could not embed the query text',
  },
  healthWeightsFixed: { status: 501, code: 'not_implemented', message: 'Health weights are not customizable', when: 'PUT of health weights (they are fixed)' },
  memoryUnreachable: {
    status: 502,
    code: 'memory_unreachable',
    message: 'The memory server did not answer',
    when: 'The memory server did not answer a memory route',
  },
  streamLimit: {
    status: 503,
    code: 'too_many_streams',
    message: 'This instance serves as many event streams as it may (STREAM_MAX_CONNECTIONS); retry shortly',
    when: 'GET /api/stream when the instance serves STREAM_MAX_CONNECTIONS streams',
  },
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

const observeErrorCodes = Object.values(observeErrors).map((spec) => spec.code) as [string, ...string[]];

/** The observe error body; every error response of the OpenAPI document refers to it. */
export const observeErrorSchema = z
  .object({
    error: z.string().meta({ description: 'What went wrong, for a person to read' }),
    code: z.enum(observeErrorCodes).meta({ description: 'Stable and unique per error, for programs to branch on (docs/reference/errors.md)' }),
    status: z.number().int().meta({ description: 'The HTTP status, repeated' }),
    details: z.array(errorDetailSchema).optional(),
  })
  .meta({ id: 'ObserveError' });

export function renderObserveError(error: ServiceError): z.infer<typeof observeErrorSchema> {
  return error.details && error.details.length > 0
    ? { error: error.message, code: error.code, status: error.status, details: error.details }
    : { error: error.message, code: error.code, status: error.status };
}
