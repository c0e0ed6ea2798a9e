// `vigil verify --url` of the gate's log: every request's row against its logged audit entries
// (docs/audit.md, "A request's row under its chain"): the status an agent polls, its params and its
// decider are what the log says, or the request is a finding.
import { chainedRequestState, erasureOfMarker, requestEvidenceMismatches, type ChainedRequestEntry, type RequestEvidence } from '@vigil/gate/request-evidence';
import type { ErasedRequests } from './erasures.ts';
import { isRecord, type Finding } from './input.ts';

/** A request's row as GET /api/audit/requests answers it. */
interface StoredRequest extends Omit<RequestEvidence, 'escalation'> {
  /** Absent from a gate older than escalation (null then). */
  escalation?: string | null;
  requestId: string;
  headSeq: number;
  /** The erasure whose marker its params and context are (absent from a gate older than erasure). */
  erasedBy?: string | null;
}

/** Fetches one API path (with query) and answers its parsed JSON body; throws on failure. */
type ApiGet = (path: string) => Promise<unknown>;

const PAGE = 1000;

/** The members of an entry's details the replay reads (evidence.ts); the rest is not kept. */
function keptDetails(details: unknown): Record<string, unknown> | null {
  if (!isRecord(details)) return null;
  if (erasureOfMarker(details) !== null) return details;
  const { requestHash, reason, result, tier, deadlineAt } = details;
  return { requestHash, reason, result, tier, deadlineAt };
}

/** Fed every walked entry of the gate's log; then compares every stored request with the replay of its entries. */
export class RequestRowAudit {
  /** Entries by request, then by seq. */
  private readonly trails = new Map<string, Map<number, ChainedRequestEntry>>();
  /** Requests left out: their head moved on since the walk, or their chain has a gap (the walk reports it). */
  skipped = 0;

  /** `erased`: the requests accepted erasure leaves list (erasures.ts), whose rows stand for the requestHash the leaf names. */
  constructor(private readonly erased: ErasedRequests = new Map()) {}

  add(fields: Record<string, unknown>): void {
    const { requestId, seq, action, timestamp, event, actor, details } = fields;
    if (typeof requestId !== 'string' || typeof seq !== 'number' || typeof action !== 'string' || typeof timestamp !== 'string') return;
    if (typeof event !== 'string' || typeof actor !== 'string') return;
    let trail = this.trails.get(requestId);
    if (trail === undefined) this.trails.set(requestId, (trail = new Map()));
    if (!trail.has(seq)) trail.set(seq, { action, timestamp, event, actor, details: keptDetails(details) });
  }

  async finish(get: ApiGet): Promise<Finding[]> {
    const findings: Finding[] = [];
    let after: string | null = null;
    do {
      const query: string = after === null ? `?limit=${PAGE}` : `?limit=${PAGE}&after=${encodeURIComponent(after)}`;
      const page = (await get(`/api/audit/requests${query}`)) as { requests: StoredRequest[]; nextCursor: string | null };
      for (const stored of page.requests) {
        const finding = this.check(stored);
        if (finding !== undefined) findings.push(finding);
      }
      after = page.nextCursor;
    } while (after !== null);
    return findings;
  }

  private check(stored: StoredRequest): Finding | undefined {
    const trail = this.trails.get(stored.requestId);
    if (trail === undefined) {
      // Created after the walk, or its entries are all gone (the walk reports those).
      if (stored.headSeq >= 0) this.skipped += 1;
      return undefined;
    }
    const entries: ChainedRequestEntry[] = [];
    for (let seq = 0; trail.has(seq); seq += 1) entries.push(trail.get(seq)!);
    const lastSeq = entries.length - 1;
    // Decided after the walk read its entries, or a gap the walk already names: nothing to compare yet.
    if (stored.headSeq > lastSeq || entries.length !== trail.size) {
      this.skipped += 1;
      return undefined;
    }
    const chained = chainedRequestState(entries);
    const problems: string[] = [];
    let requestHash = stored.requestHash;
    if (typeof stored.erasedBy === 'string') {
      const cover = this.erased.get(stored.requestId);
      if (cover?.erasureId === stored.erasedBy) requestHash = cover.requestHash;
      else problems.push(`its params and context were replaced by an erasure marker (erasure ${stored.erasedBy}) that no signed erasure leaf covers`);
    }
    if (chained === undefined) problems.push('its logged trail does not start with its created entry');
    else if (problems.length === 0) problems.push(...requestEvidenceMismatches({ ...stored, requestHash, escalation: stored.escalation ?? null }, chained));
    if (stored.headSeq < lastSeq) problems.unshift(`its row records its chain up to seq ${stored.headSeq}, but the log holds entries up to seq ${lastSeq}`);
    if (problems.length === 0) return undefined;
    return {
      check: 'request-row',
      sessionId: stored.requestId,
      message: `request ${stored.requestId} does not match its logged audit entries: ${problems.join('; ')}`,
    };
  }
}
