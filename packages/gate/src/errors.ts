import { errorDetailSchema, errorFactory, ServiceError, type ErrorCatalogue } from '@vigil/platform';
import { z } from 'zod';

/** Every error the gate answers with. Body: `{ error: { code, message } }`. */
export const gateErrors = {
  validation: {
    status: 400,
    code: 'bad_request',
    message: 'Invalid request body',
    when: 'A body, query or path parameter fails its schema (details name each field), or an unknown query parameter is sent',
  },
  invalidJson: {
    status: 400,
    code: 'bad_request',
    message: 'Malformed JSON body',
    when: 'The body is not JSON: malformed, with a byte order mark, not UTF-8, or with a prototype-poisoning key',
  },
  unsafePattern: {
    status: 400,
    code: 'bad_request',
    message: 'Unsafe regular expression',
    when: 'A policy matcher holds a regular expression that could backtrack catastrophically',
  },
  reasonRequired: {
    status: 400,
    code: 'bad_request',
    message: 'The matching policy rule requires a reason for this decision',
    when: 'A decision without a reason where the matching policy rule requires one',
  },
  unauthorized: {
    status: 401,
    code: 'unauthorized',
    message: 'Missing or invalid API key',
    when: 'No API key or session token, or one that is unknown, revoked or expired',
  },
  chatSignature: {
    status: 401,
    code: 'unauthorized',
    message: 'Missing, invalid or stale chat platform signature',
    when: 'A Slack or Discord interaction whose signature is missing, invalid or stale',
  },
  forbidden: { status: 403, code: 'forbidden', message: 'The API key lacks the scope this route needs', when: 'The API key lacks the scope the route needs' },
  routeNotFound: { status: 404, code: 'not_found', message: 'Route not found', when: 'No route has this method and path' },
  requestNotFound: { status: 404, code: 'not_found', message: 'Request not found', when: 'No approval request has this id' },
  policyNotFound: { status: 404, code: 'not_found', message: 'Policy not found', when: 'No policy has this id' },
  keyNotFound: { status: 404, code: 'not_found', message: 'API key not found', when: 'No API key has this id' },
  webhookNotFound: { status: 404, code: 'not_found', message: 'Webhook not found', when: 'No webhook has this id' },
  checkpointNotFound: {
    status: 404,
    code: 'not_found',
    message: 'No audit checkpoint (at that tree size)',
    when: 'No signed audit checkpoint exists yet, or none at the tree size asked for',
  },
  auditItemNotFound: {
    status: 404,
    code: 'not_found',
    message: 'Audit entry not found in the audit log',
    when: 'The audit entry has no leaf in the audit log',
  },
  auditTreeSize: {
    status: 400,
    code: 'bad_request',
    message: "The tree size is beyond the audit log, before the entry's leaf, or from is after to",
    when: 'An audit proof asks for a tree size beyond the log, before the leaf, or a range whose from is after its to',
  },
  alreadyDecided: { status: 409, code: 'conflict', message: 'Request already decided', when: 'Deciding a request that is no longer pending' },
  notConfirmable: {
    status: 409,
    code: 'conflict',
    message: 'Only an approved, unconfirmed request can be confirmed',
    when: 'Confirming a request that is not approved, or already confirmed',
  },
  payloadTooLarge: { status: 413, code: 'payload_too_large', message: 'Request body larger than 1 MB', when: 'The body exceeds 1 MB' },
  unsupportedMediaType: {
    status: 415,
    code: 'unsupported_media_type',
    message: 'Content-Type must be application/json',
    when: 'A body that is not application/json (or a charset or Content-Encoding the route does not take)',
  },
  rateLimited: { status: 429, code: 'rate_limited', message: 'Rate limit exceeded', when: 'The key exceeded its rate limit (retry after Retry-After)' },
  requestTampered: {
    status: 500,
    code: 'internal_error',
    message: 'The request does not match its audit trail',
    when: 'A request whose stored row (status, decider, params, …) differs from what its logged audit chain says, or whose chain does not verify: it was changed outside the gate, and is neither answered nor acted on (`vigil verify` names it)',
  },
  internal: {
    status: 500,
    code: 'internal_error',
    message: 'Internal server error',
    when: 'An unexpected failure, database errors included (logged with the request)',
  },
  unavailable: {
    status: 503,
    code: 'unavailable',
    message: 'A dependency is unavailable; retry shortly',
    when: 'The database is unreachable, or the service is shutting down (retry after Retry-After)',
  },
} satisfies ErrorCatalogue<string>;

export type GateErrorKey = keyof typeof gateErrors;

export const gateError = errorFactory<GateErrorKey>(gateErrors);

const gateErrorCodes = [...new Set(Object.values(gateErrors).map((spec) => spec.code))] as [string, ...string[]];

/** The gate error body; every error response of the OpenAPI document refers to it. */
export const gateErrorSchema = z
  .object({
    error: z.object({
      code: z.enum(gateErrorCodes).meta({ description: 'Stable, for programs to branch on' }),
      message: z.string().meta({ description: 'What went wrong, for a person to read' }),
      details: z.array(errorDetailSchema).optional(),
    }),
  })
  .meta({ id: 'GateError' });

export function renderGateError(error: ServiceError): { error: { code: string; message: string; details?: unknown } } {
  return error.details && error.details.length > 0
    ? { error: { code: error.code, message: error.message, details: error.details } }
    : { error: { code: error.code, message: error.message } };
}
