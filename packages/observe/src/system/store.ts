import { SYSTEM_AGENT_ID } from '../events/index.ts';
import type { ObserveDatabase } from '../schema.ts';

export interface StoredCounts {
  events: number;
  sessions: number;
  /** The user's agents (not the system agent of alert bookkeeping). */
  agents: number;
  oldestTs: number | null;
  newestTs: number | null;
}

/** What is stored: events (summed from the session counters), sessions, agents, and the time span of the events. */
export async function storedCounts(database: ObserveDatabase): Promise<StoredCounts> {
  const { db } = database;
  const [sessions, agents, oldest, newest] = await Promise.all([
    db
      .selectFrom('sessions')
      .select((eb) => [eb.fn.countAll<number>().as('sessions'), eb.fn.coalesce(eb.fn.sum<number>('event_count'), eb.lit(0)).as('events')])
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('agents')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('id', '<>', SYSTEM_AGENT_ID)
      .executeTakeFirstOrThrow(),
    db.selectFrom('events').select('ts').orderBy('ts', 'asc').limit(1).executeTakeFirst(),
    db.selectFrom('events').select('ts').orderBy('ts', 'desc').limit(1).executeTakeFirst(),
  ]);
  return {
    events: Number(sessions.events),
    sessions: Number(sessions.sessions),
    agents: Number(agents.n),
    oldestTs: oldest?.ts ?? null,
    newestTs: newest?.ts ?? null,
  };
}
