import { verifyChain, type ChainVerdict } from '../events/chain.ts';
import { sessionEvents, toLink } from '../events/store.ts';
import type { EventRow, ObserveDatabase, SessionRow } from '../schema.ts';

export interface Timeline {
  rows: EventRow[];
  verdict: ChainVerdict;
}

/**
 * A session's events in timeline order, with the chain verified in seq order. Only events up to
 * the chain head read with the session count: one appended in between belongs to a later head.
 */
export async function sessionTimeline(database: ObserveDatabase, session: SessionRow): Promise<Timeline> {
  const rows = (await sessionEvents(database, session.id)).filter((row) => row.seq <= session.last_seq);
  const verdict = verifyChain(rows.map(toLink), { lastSeq: session.last_seq, lastHash: session.last_hash });
  return { rows, verdict };
}
