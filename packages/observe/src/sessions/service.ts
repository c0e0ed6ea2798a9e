import { verifyChain, type ChainVerdict } from '../events/chain.ts';
import { sessionEvents, toEvent } from '../events/store.ts';
import type { Event } from '../events/schemas.ts';
import type { ObserveDatabase, SessionRow } from '../schema.ts';

export interface Timeline {
  events: Event[];
  verdict: ChainVerdict;
}

/** A session's events in timeline order, with the chain verified in seq order. */
export async function sessionTimeline(database: ObserveDatabase, session: SessionRow): Promise<Timeline> {
  const events = (await sessionEvents(database, session.id)).map(toEvent);
  const verdict = verifyChain(events, { lastSeq: session.last_seq, lastHash: session.last_hash });
  return { events, verdict };
}
