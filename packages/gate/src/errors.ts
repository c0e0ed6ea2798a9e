import { errorDetailSchema, errorFactory, ServiceError, type ErrorCatalogue } from '@vigil/platform';
import { z } from 'zod';

/** Every error the gate answers with. Body: `{ error: { code, message } }`. */
export const gateErrors = {
  validation: { status: 400, code: 'bad_request', message: 'Invalid request body' },
  invalidJson: { status: 400, code: 'bad_request', message: 'Malformed JSON body' },
  unsafePattern: { status: 400, code: 'bad_request', message: 'Unsafe regular expression' },
  reasonRequired: { status: 400, code: 'bad_request', message: 'The matching policy rule requires a reason for this decision' },
  unauthorized: { status: 401, code: 'unauthorized', message: 'Missing or invalid API key' },
  chatSignature: { status: 401, code: 'unauthorized', message: 'Missing, invalid or stale chat platform signature' },
  forbidden: { status: 403, code: 'forbidden', message: 'The API key lacks the scope this route needs' },
  routeNotFound: { status: 404, code: 'not_found', message: 'Route not found' },
  requestNotFound: { status: 404, code: 'not_found', message: 'Request not found' },
  policyNotFound: { status: 404, code: 'not_found', message: 'Policy not found' },
  keyNotFound: { status: 404, code: 'not_found', message: 'API key not found' },
  webhookNotFound: { status: 404, code: 'not_found', message: 'Webhook not found' },
  checkpointNotFound: { status: 404, code: 'not_found', message: 'No audit checkpoint (at that tree size)' },
  auditItemNotFound: { status: 404, code: 'not_found', message: 'Audit entry not found in the audit log' },
  auditTreeSize: {
    status: 400,
    code: 'bad_request',
    message: "The tree size is beyond the audit log, before the entry's leaf, or from is after to",
  },
  alreadyDecided: { status: 409, code: 'conflict', message: 'Request already decided' },
  notConfirmable: { status: 409, code: 'conflict', message: 'Only an approved, unconfirmed request can be confirmed' },
  payloadTooLarge: { status: 413, code: 'payload_too_large', message: 'Request body larger than 1 MB' },
  unsupportedMediaType: { status: 415, code: 'unsupported_media_type', message: 'Content-Type must be application/json' },
  rateLimited: { status: 429, code: 'rate_limited', message: 'Rate limit exceeded' },
  internal: { status: 500, code: 'internal_error', message: 'Internal server error' },
  unavailable: { status: 503, code: 'unavailable', message: 'A dependency is unavailable; retry shortly' },
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
