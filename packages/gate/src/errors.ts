import { errorDetailSchema, errorFactory, kitErrors, notFound, ServiceError, type ErrorCatalogue } from '@vigil/platform';
import { z } from 'zod';

/** Every error the gate answers with. Body: `{ error: { code, message } }`. */
export const gateErrors = {
  ...kitErrors({
    // The specification's one code per status (errors.test.ts).
    validation: { code: 'bad_request', message: 'Invalid request body' },
    invalidJson: { code: 'bad_request' },
    unauthorized: { when: 'No API key or session token, or one that is unknown, revoked or expired' },
    routeNotFound: { code: 'not_found' },
    // The specification fixes the gate's body limit at 1 MB.
    payloadTooLarge: { message: 'Request body larger than 1 MB', when: 'The body exceeds 1 MB' },
    internal: { code: 'internal_error', when: 'An unexpected failure, database errors included (logged with the request)' },
  }),
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
  chatSignature: {
    status: 401,
    code: 'unauthorized',
    message: 'Missing, invalid or stale chat platform signature',
    when: 'A Slack or Discord interaction whose signature is missing, invalid or stale',
  },
  chatReplay: {
    status: 401,
    code: 'unauthorized',
    message: 'This chat interaction was already received: a replayed signature is refused',
    when: 'A Slack or Discord interaction received before (the same signed timestamp and body), replayed within its signature window',
  },
  redactionFailed: {
    status: 422,
    code: 'redaction_failed',
    message: 'A redaction rule failed on the request; nothing was stored',
    when: 'POST /api/requests whose params or context a redaction rule (REDACTION_RULES_FILE, REDACTION_DETECTORS) failed on; the message names the rule',
  },
  requestNotFound: { status: 404, code: 'not_found', message: 'Request not found', when: 'No approval request has this id' },
  policyNotFound: notFound('not_found', 'policy'),
  erasureNotFound: notFound('not_found', 'erasure'),
  subjectNotFound: {
    status: 404,
    code: 'not_found',
    message: 'No stored request names this data subject',
    when: 'DELETE /api/subjects/:id of a subject no request names at GATE_SUBJECT_PATHS (or one erased already; requests created before the subject index existed are not in it)',
  },
  subjectRequestPending: {
    status: 409,
    code: 'conflict',
    message: 'A request of this data subject is still pending: decide it (or let it expire) first; nothing was erased',
    when: 'DELETE /api/subjects/:id while a request naming the subject awaits its decision (the details list its ids)',
  },
  keyNotFound: notFound('not_found', 'API key'),
  webhookNotFound: notFound('not_found', 'webhook'),
  approverGroupNotFound: notFound('not_found', 'approver group'),
  delegationNotFound: notFound('not_found', 'delegation'),
  approverGroupExists: {
    status: 409,
    code: 'conflict',
    message: 'An approver group of that name exists',
    when: 'Creating or renaming an approver group onto a name another group has',
  },
  alreadyVoted: {
    status: 409,
    code: 'conflict',
    message: 'This decider has already voted on the request',
    when: 'A second vote on a request that needs several approvals from the same decider (or for the same delegator)',
  },
  notAnApprover: {
    status: 403,
    code: 'forbidden',
    message: "The decider is not in the request's approver groups",
    when: "Voting on a request whose rule's quorum names approver groups, by someone who is neither a member nor a member's delegate now",
  },
  grantNotFound: notFound('not_found', 'grant'),
  budgetNotFound: notFound('not_found', 'budget'),
  budgetInvalid: {
    status: 400,
    code: 'bad_request',
    message: 'Invalid budget',
    when: 'A budget whose name is taken, a tag budget without its tag, a tenant budget with a scopeValue, or a softUsd above its hardUsd; the message says which',
  },
  grantInvalid: {
    status: 400,
    code: 'bad_request',
    message: 'Invalid grant',
    when: 'POST /api/grants without an action, without an agent or session, without a duration or a number of uses, or naming another action than its request; the message says which',
  },
  grantRevoked: { status: 409, code: 'conflict', message: 'The grant is already revoked', when: 'Revoking a grant a second time' },
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
  auditTileNotFound: {
    status: 404,
    code: 'not_found',
    message: 'No such tile of the audit log',
    when: 'GET /api/audit/tlog/tile/… names no hash tile (tlog-tiles spelling: <L>/<N>[.p/<W>]; no entry bundles are served) or a tile beyond the latest checkpoint',
  },
  auditCosignatureInvalid: {
    status: 422,
    code: 'cosignature_invalid',
    message: 'The cosigned checkpoint was refused',
    when: 'POST /api/audit/tlog/cosignatures: the note is not a checkpoint the log signed, or a signature line is not a valid cosignature of a configured witness (AUDIT_COSIGNERS); the message says which',
  },
  auditLogIncomplete: {
    status: 409,
    code: 'conflict',
    message: 'The audit log is missing rows a root or proof needs',
    when: 'A root or proof (a checkpoint, consistency or inclusion proof, an export) needs audit log rows that were deleted behind the service; the message names the leaf or stored node',
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
  receiptNotIssued: {
    status: 404,
    code: 'not_found',
    message: 'The request is not approved: it has no receipt',
    when: 'Asking for the receipt of a request that is pending, denied or expired',
  },
  receiptMalformed: {
    status: 400,
    code: 'bad_request',
    message: 'Malformed approval receipt',
    when: 'A receipt to redeem that is not an approval receipt of version 1 (a field missing, mistyped or extra); details name the fields',
  },
  receiptSignature: {
    status: 401,
    code: 'unauthorized',
    message: "The receipt's signature does not verify with the gate's signing keys",
    when: "A receipt whose signature is not the gate's audit key's (or the key it replaced) over its fields: forged, altered, or signed by another gate",
  },
  receiptExpired: {
    status: 410,
    code: 'receipt_expired',
    message: 'The receipt has expired',
    when: 'Redeeming a receipt past its expiresAt (15 minutes after the decision): ask for approval again',
  },
  receiptMismatch: {
    status: 422,
    code: 'receipt_mismatch',
    message: 'The action or params differ from the ones the receipt approves',
    when: "Redeeming a receipt for another action, or for params whose canonical digest is not the receipt's argsDigest (arguments changed after approval)",
  },
  receiptRedeemed: {
    status: 409,
    code: 'conflict',
    message: 'The receipt was already redeemed',
    when: 'Redeeming a receipt a second time (a replay): each approval runs its action once',
  },
  rateLimited: { status: 429, code: 'rate_limited', message: 'Rate limit exceeded', when: 'The key exceeded its rate limit (retry after Retry-After)' },
  requestTampered: {
    status: 500,
    code: 'internal_error',
    message: 'The request does not match its audit trail',
    when: 'A request whose stored row (status, decider, params, …) differs from what its logged audit chain says, or whose chain does not verify: it was changed outside the gate, and is neither answered nor acted on (`vigil verify` names it)',
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
