// What a request's audit chain says its row must hold (docs/audit.md, "A request's row under its
// chain"). Pure, and light enough for `vigil verify` (node:crypto and the canonical JSON only): the
// gate checks every row it reads or acts on with it, and the verifier every row the gate stores.
import { hash } from 'node:crypto';
import { canonicalJson } from '@vigil/platform/audit-verify';
import { erasedReasonText, erasureMarkerText, erasureOfMarker } from '../stored-formats/index.ts';

// The erasure's marker and leaf, for `vigil verify` through this light entry (@vigil/gate/request-evidence).
export { erasureOfMarker, parseGateErasureLeaf } from '../stored-formats/index.ts';

/** The decision reason the expiry writes (its audit entry names the deadline, not the reason). */
export const EXPIRED_REASON = 'Expired before a decision';

/** A request's fields its audit chain commits to, in the API's names (times ISO 8601). */
export interface RequestEvidence {
  action: string;
  createdAt: string;
  /**
   * SHA-256 (hex) of what the request was created with: requestInputText of its action, params,
   * context, urgency, expiresAt and policy decision. The `created` entry's details carry it
   * (`requestHash`); null on the chain's side for a request created before they did.
   */
  requestHash: string | null;
  status: string;
  decidedBy: string | null;
  decidedAt: string | null;
  decisionReason: string | null;
  confirmedAt: string | null;
  /** The execution result as RFC 8785 canonical JSON text. */
  executionResult: string | null;
  /**
   * Where its deadline stands after escalations (escalation/): `tier N until <deadline>` as its last
   * `escalated` entry set it; null while it has none (its deadline is then its expiresAt).
   */
  escalation: string | null;
}

/** What the creation fixes, each JSON value as its RFC 8785 canonical text. */
export interface RequestInput {
  action: string;
  params: string;
  context: string;
  urgency: string;
  expiresAt: string | null;
  policyDecision: string;
}

/**
 * RFC 8785 canonical JSON of {action, context, expiresAt, params, policyDecision, urgency}, written
 * out in member order from the members' canonical texts (the gate stores params, context and the
 * policy decision as canonical JSON, so a read hashes them without parsing them).
 */
export function requestInputText(input: RequestInput): string {
  const json = JSON.stringify;
  return (
    `{"action":${json(input.action)},"context":${input.context},"expiresAt":${json(input.expiresAt)},"params":${input.params}` +
    `,"policyDecision":${input.policyDecision},"urgency":${json(input.urgency)}}`
  );
}

export function requestInputHash(input: RequestInput): string {
  return hash('sha256', requestInputText(input), 'hex');
}

/** An audit entry of the request, as its chain object has it. */
export interface ChainedRequestEntry {
  action: string;
  timestamp: string;
  event: string;
  actor: string;
  details: Record<string, unknown> | null;
}

const stringOrNull = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** `tier N until <deadline>`: a request's escalation as its row and its chain both spell it. */
export function escalationText(tier: unknown, deadlineAt: unknown): string {
  return `tier ${String(tier)} until ${String(deadlineAt)}`;
}

/**
 * The request as its audit entries (seq order, from 0) make it: `created` starts it pending; a
 * decision (`approved`, `denied`, `expired`) sets status, decider (the entry's actor), time and
 * reason; `confirmed` sets the confirmation time and result; other entries (a refused chat click,
 * an escalation, a reminder) change nothing. Undefined when the trail does not start with `created`.
 */
export function chainedRequestState(entries: readonly ChainedRequestEntry[]): RequestEvidence | undefined {
  const created = entries[0];
  if (created?.event !== 'created') return undefined;
  const state: RequestEvidence = {
    action: created.action,
    createdAt: created.timestamp,
    requestHash: stringOrNull(created.details?.requestHash),
    status: 'pending',
    decidedBy: null,
    decidedAt: null,
    decisionReason: null,
    confirmedAt: null,
    executionResult: null,
    escalation: null,
  };
  for (const entry of entries.slice(1)) {
    // An erased entry's details are the marker: its reason and result are the erased texts its row holds too.
    const erasure = erasureOfMarker(entry.details);
    switch (entry.event) {
      case 'escalated':
        state.escalation = escalationText(entry.details?.tier, entry.details?.deadlineAt);
        break;
      case 'approved':
      case 'denied':
      case 'expired':
        state.status = entry.event;
        state.decidedBy = entry.actor;
        state.decidedAt = entry.timestamp;
        // An expiry that failed closed under an escalation plan records its reason; a plain one the fixed reason.
        state.decisionReason =
          erasure !== null
            ? erasedReasonText(erasure)
            : entry.event === 'expired'
              ? (stringOrNull(entry.details?.reason) ?? EXPIRED_REASON)
              : stringOrNull(entry.details?.reason);
        break;
      case 'confirmed':
        state.confirmedAt = entry.timestamp;
        state.executionResult = erasure !== null ? erasureMarkerText(erasure) : canonicalJson(entry.details?.result ?? null);
        break;
    }
  }
  return state;
}

const FIELDS: readonly (keyof RequestEvidence)[] = [
  'action',
  'createdAt',
  'requestHash',
  'status',
  'decidedBy',
  'decidedAt',
  'decisionReason',
  'confirmedAt',
  'executionResult',
  'escalation',
];

/** How the field is named in a finding (the hash stands for what it covers). */
const FIELD_NAMES: Record<keyof RequestEvidence, string> = {
  action: 'action',
  createdAt: 'createdAt',
  requestHash: 'params, context, urgency, expiresAt or policy decision',
  status: 'status',
  decidedBy: 'decidedBy',
  decidedAt: 'decidedAt',
  decisionReason: 'decisionReason',
  confirmedAt: 'confirmedAt',
  executionResult: 'executionResult',
  escalation: 'escalation',
};

const shown = (value: string | null): string =>
  value === null ? 'null' : value.length > 80 ? `${JSON.stringify(value.slice(0, 80))}…` : JSON.stringify(value);

/**
 * Where a stored row differs from what its chain says, one phrase per field; empty when it agrees.
 * A request whose `created` entry commits to no request hash was created before the chain covered
 * its row: nothing is compared (docs/audit.md).
 */
export function requestEvidenceMismatches(stored: RequestEvidence, chained: RequestEvidence): string[] {
  if (chained.requestHash === null) return [];
  return FIELDS.filter((field) => stored[field] !== chained[field]).map((field) =>
    field === 'requestHash'
      ? `its ${FIELD_NAMES[field]} differ from what its created entry committed to`
      : `${FIELD_NAMES[field]} is ${shown(stored[field])} in the row but ${shown(chained[field])} in its audit chain`,
  );
}
