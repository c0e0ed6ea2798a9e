import { PreparedQuery } from '@vigil/platform';
import { roundUsd } from '@vigil/pricing';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';

export interface StoredCounts {
  events: number;
  sessions: number;
  /** The user's agents (not the system agent of alert bookkeeping). */
  agents: number;
  oldestTs: number | null;
  newestTs: number | null;
  /** USD spent on LLM-judge calls (evals/), to the nano-dollar. */
  judgeSpendUsd: number;
}

/**
 * One statement, compiled once, whose cost depends on no count of rows: the store's totals and the
 * judge spend are one row each, kept by the writes that change them (events/totals.ts,
 * evals/store.ts); the oldest and newest event are min/max over the `ts` index, each one end of it.
 */
const countsQuery = new PreparedQuery<ObserveSchema, [], Record<'events' | 'sessions' | 'agents' | 'judge_usd' | 'oldest' | 'newest', unknown>>((db) =>
  db
    .selectFrom('store_totals as t')
    .innerJoin('judge_spend as j', 'j.id', 't.id')
    .select((eb) => [
      't.events',
      't.sessions',
      't.agents',
      'j.usd as judge_usd',
      eb
        .selectFrom('events')
        .select((e) => e.fn.min('ts').as('ts'))
        .as('oldest'),
      eb
        .selectFrom('events')
        .select((e) => e.fn.max('ts').as('ts'))
        .as('newest'),
    ])
    .where('t.id', '=', 1),
);

/** What is stored: events, sessions, agents, the time span of the events, and the judge spend. */
export async function storedCounts(database: ObserveDatabase): Promise<StoredCounts> {
  const row = (await countsQuery.first(database.db, database.dialect))!;
  return {
    events: Number(row.events),
    sessions: Number(row.sessions),
    agents: Number(row.agents),
    oldestTs: row.oldest === null ? null : Number(row.oldest),
    newestTs: row.newest === null ? null : Number(row.newest),
    judgeSpendUsd: roundUsd(Number(row.judge_usd)),
  };
}
