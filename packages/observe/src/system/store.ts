import { PreparedQuery } from '@vigil/platform';
import { SYSTEM_AGENT_ID } from '../events/index.ts';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';

export interface StoredCounts {
  events: number;
  sessions: number;
  /** The user's agents (not the system agent of alert bookkeeping). */
  agents: number;
  oldestTs: number | null;
  newestTs: number | null;
}

/**
 * One statement, compiled once: the session counters kept by ingest (one pass over `sessions`),
 * the agents, and the oldest and newest event through the `ts` index (min/max read one end of it).
 */
const countsQuery = new PreparedQuery<ObserveSchema, [], Record<'events' | 'sessions' | 'agents' | 'oldest' | 'newest', unknown>>((db) =>
  db.selectNoFrom((eb) => [
    eb
      .selectFrom('sessions')
      .select((s) => s.fn.countAll().as('n'))
      .as('sessions'),
    eb
      .selectFrom('sessions')
      .select((s) => s.fn.coalesce(s.fn.sum('event_count'), s.lit(0)).as('n'))
      .as('events'),
    eb
      .selectFrom('agents')
      .select((a) => a.fn.countAll().as('n'))
      .where('id', '<>', SYSTEM_AGENT_ID)
      .as('agents'),
    eb
      .selectFrom('events')
      .select((e) => e.fn.min('ts').as('ts'))
      .as('oldest'),
    eb
      .selectFrom('events')
      .select((e) => e.fn.max('ts').as('ts'))
      .as('newest'),
  ]),
);

/** What is stored: events (summed from the session counters), sessions, agents, and the time span of the events. */
export async function storedCounts(database: ObserveDatabase): Promise<StoredCounts> {
  const row = (await countsQuery.first(database.db, database.dialect))!;
  return {
    events: Number(row.events),
    sessions: Number(row.sessions),
    agents: Number(row.agents),
    oldestTs: row.oldest === null ? null : Number(row.oldest),
    newestTs: row.newest === null ? null : Number(row.newest),
  };
}
