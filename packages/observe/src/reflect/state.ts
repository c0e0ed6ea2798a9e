/**
 * Per-session reflect state: each session's error_patterns and tool_sequences figures over all its
 * events (figures.ts), kept off the request path by a periodic job and marked with the chain head
 * (`sessions.last_hash`) they were computed at. A state row counts only while that head is still the
 * session's head: any appended event moves the head, so a stale state is never read, and a
 * session deleted by retention and started again has other hashes. An answer over [from, to] takes
 * a session from its state when all the rows it counts lie inside the range (and are of the asked
 * agent), skips it when none can, and reads every other session (cut by the range, stale, or
 * mixing agents) from its events.
 */
import { readSnapshot } from '@vigil/platform';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import type { ObserveContext } from '../context.ts';
import type { ObserveSchema } from '../schema.ts';
import { rawFigures, SEPARATOR, type SessionFigures } from './figures.ts';

/**
 * Bumped whenever what a session's figures hold changes (the error text, the normalisation rules of
 * normalise.ts, the n-gram sizes, the preceding tools): states of another version are never read
 * and are computed again.
 */
export const REFLECT_STATE_VERSION = 1;
export const REFLECT_STATE_INTERVAL_MS = 5000;
/** A session still written to gets its state after this long at most (else once quiet for a tick). */
export const MAX_STALE_MS = 60_000;
/** Events read per recomputation statement (sessions are grouped up to this many). */
const EVENTS_PER_PASS = 20_000;
const ROWS_PER_INSERT = 200;

// Stored text is JSON (a pattern may hold any character, PostgreSQL text no NUL): tool names as an
// array, a pattern as a string.
const toolsText = (key: string): string => JSON.stringify(key.split(SEPARATOR));
export const toolsKey = (text: string): string => (JSON.parse(text) as string[]).join(SEPARATOR);

export interface StateRange {
  from: number;
  to: number;
  agentId?: string;
}

type StateDb = Kysely<ObserveSchema>;

/** The current states (head still the session's, this version) of sessions wholly inside the range. */
function insideStates(db: StateDb, range: StateRange) {
  let q = db
    .selectFrom('reflect_sessions as r')
    .innerJoin('sessions as s', (join) => join.onRef('s.id', '=', 'r.session_id').onRef('s.last_hash', '=', 'r.head_hash'))
    .where('r.version', '=', REFLECT_STATE_VERSION)
    .where('r.min_ts', '>=', range.from)
    .where('r.max_ts', '<=', range.to);
  if (range.agentId !== undefined) q = q.where('r.agent_id', '=', range.agentId);
  return q;
}

/**
 * The sessions to read from their events: those with an event in [from, to] whose state is missing,
 * stale, cut by the range, or (for an agent) mixing agents. Sessions whose current state is wholly
 * inside are read from the state; those whose current state has no row in the range (or only
 * another agent's) count nothing.
 */
async function sessionsToRead(db: StateDb, range: StateRange): Promise<string[]> {
  const { from, to, agentId } = range;
  const rows = await db
    .selectFrom('sessions as s')
    .leftJoin('reflect_sessions as r', (join) =>
      join.onRef('r.session_id', '=', 's.id').onRef('r.head_hash', '=', 's.last_hash').on('r.version', '=', REFLECT_STATE_VERSION),
    )
    .select('s.id')
    .where('s.started_at', '<=', to)
    .where('s.last_event_at', '>=', from)
    .where((eb) =>
      eb.or([
        eb('r.session_id', 'is', null),
        eb.not(
          eb.or([
            // Nothing of it counts.
            eb('r.min_ts', 'is', null),
            eb('r.max_ts', '<', from),
            eb('r.min_ts', '>', to),
            ...(agentId === undefined ? [] : [eb.and([eb('r.agent_id', 'is not', null), eb('r.agent_id', '<>', agentId)])]),
            // All of it counts: read from the state.
            eb.and([
              eb('r.min_ts', '>=', from),
              eb('r.max_ts', '<=', to),
              // (No term may be null here: `not` of an unknown would drop the session.)
              ...(agentId === undefined ? [] : [eb('r.agent_id', 'is not', null), eb('r.agent_id', '=', agentId)]),
            ]),
          ]),
        ),
      ]),
    )
    .execute();
  return rows.map((row) => row.id);
}

export interface StateSplit<T> {
  /** What the states of the sessions read from them hold. */
  kept: T;
  /** Sessions read from the state: left out of the events read. */
  keptSessions: Set<string>;
  /** Sessions to read from their events. */
  raw: string[];
}

/** One snapshot: what `read` takes from the states wholly inside the range, and which sessions are to be read from events instead. */
async function split<T>(ctx: ObserveContext, range: StateRange, read: (db: StateDb) => Promise<T>): Promise<StateSplit<T>> {
  return readSnapshot(ctx.database, async (db) => {
    const kept = await read(db);
    const keptSessions = new Set((await insideStates(db, range).select('r.session_id').execute()).map((row) => row.session_id));
    const raw = await sessionsToRead(db, range);
    return { kept, keptSessions, raw };
  });
}

export interface KeptNgram {
  key: string;
  frequency: number;
  sessions: number;
  failed: number;
}

export function ngramSplit(ctx: ObserveContext, range: StateRange): Promise<StateSplit<KeptNgram[]>> {
  return split(ctx, range, async (db) => {
    const rows = await insideStates(db, range)
      .innerJoin('reflect_ngrams as n', 'n.session_id', 'r.session_id')
      .select((eb) => [
        'n.tools',
        eb.fn.sum<number>('n.frequency').as('frequency'),
        eb.fn.countAll<number>().as('sessions'),
        eb.fn.sum<number>('n.failed').as('failed'),
      ])
      .groupBy('n.tools')
      .execute();
    return rows.map((row) => ({ key: toolsKey(row.tools), frequency: Number(row.frequency), sessions: Number(row.sessions), failed: Number(row.failed) }));
  });
}

export interface KeptPatterns {
  /** One row per session and pattern. */
  occurrences: { session: string; pattern: string; count: number; first: number; last: number }[];
  /** Per pattern and preceding-tools key, summed over the sessions. */
  preceding: { pattern: string; key: string; count: number }[];
}

export function patternSplit(ctx: ObserveContext, range: StateRange): Promise<StateSplit<KeptPatterns>> {
  return split(ctx, range, async (db) => {
    const occurrences = await insideStates(db, range)
      .innerJoin('reflect_errors as e', 'e.session_id', 'r.session_id')
      .select(['e.session_id', 'e.pattern', 'e.count', 'e.first_ts', 'e.last_ts'])
      .execute();
    const preceding = await insideStates(db, range)
      .innerJoin('reflect_preceding as p', 'p.session_id', 'r.session_id')
      .select((eb) => ['p.pattern', 'p.tools', eb.fn.sum<number>('p.count').as('count')])
      .groupBy(['p.pattern', 'p.tools'])
      .execute();
    return {
      occurrences: occurrences.map((row) => ({
        session: row.session_id,
        pattern: JSON.parse(row.pattern) as string,
        count: Number(row.count),
        first: Number(row.first_ts),
        last: Number(row.last_ts),
      })),
      preceding: preceding.map((row) => ({ pattern: JSON.parse(row.pattern) as string, key: toolsKey(row.tools), count: Number(row.count) })),
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Keeping the states

interface StaleSession {
  id: string;
  last_seq: number;
  last_hash: string;
  event_count: number;
}

/**
 * Computes the states of sessions whose state is missing, stale or of another version, each from
 * its events up to the head read with it, and drops the states of deleted sessions. A session is
 * taken once its head stood still for a tick (so one still being written is not read again at every
 * tick), or once it has waited MAX_STALE_MS.
 */
/** Drops the kept state of these sessions (an erasure changed their content, not their head): the keeper computes it again from the rows. */
export async function forgetReflectState(trx: Transaction<ObserveSchema>, sessionIds: readonly string[]): Promise<void> {
  if (sessionIds.length === 0) return;
  for (const table of ['reflect_ngrams', 'reflect_errors', 'reflect_preceding', 'reflect_sessions'] as const) {
    await trx
      .deleteFrom(table)
      .where('session_id', 'in', [...sessionIds])
      .execute();
  }
}

export class ReflectStateKeeper {
  /** Stale sessions seen at the last tick: the head then, and since when it is stale. */
  private waiting = new Map<string, { head: string; since: number }>();

  constructor(
    private readonly ctx: ObserveContext,
    private readonly log: FastifyBaseLogger,
  ) {}

  async runJob(now: number): Promise<void> {
    const { db } = this.ctx.database;
    const orphans = await db
      .selectFrom('reflect_sessions as r')
      .leftJoin('sessions as s', 's.id', 'r.session_id')
      .select('r.session_id')
      .where('s.id', 'is', null)
      .execute();
    if (orphans.length > 0)
      await this.write(
        orphans.map((row) => row.session_id),
        new Map(),
        new Map(),
      );

    const stale = (await db
      .selectFrom('sessions as s')
      .leftJoin('reflect_sessions as r', 'r.session_id', 's.id')
      .select(['s.id', 's.last_seq', 's.last_hash', 's.event_count'])
      .where('s.last_hash', 'is not', null)
      .where((eb) => eb.or([eb('r.session_id', 'is', null), eb('r.version', '<>', REFLECT_STATE_VERSION), eb('r.head_hash', '<>', eb.ref('s.last_hash'))]))
      .orderBy('s.id')
      .execute()) as StaleSession[];
    const waiting = new Map<string, { head: string; since: number }>();
    const due: StaleSession[] = [];
    for (const session of stale) {
      const seen = this.waiting.get(session.id);
      if (seen !== undefined && (seen.head === session.last_hash || now - seen.since >= MAX_STALE_MS)) due.push(session);
      else waiting.set(session.id, { head: session.last_hash, since: seen?.since ?? now });
    }
    this.waiting = waiting;

    let group: StaleSession[] = [];
    let events = 0;
    const flush = async () => {
      if (group.length === 0) return;
      await this.recompute(group);
      group = [];
      events = 0;
    };
    for (const session of due) {
      group.push(session);
      events += Number(session.event_count);
      if (events >= EVENTS_PER_PASS) await flush();
    }
    await flush();
    if (due.length > 0) this.log.debug({ sessions: due.length }, 'reflect state computed');
  }

  private async recompute(sessions: StaleSession[]): Promise<void> {
    const maxSeq = new Map(sessions.map((s) => [s.id, Number(s.last_seq)]));
    const ids = sessions.map((s) => s.id);
    const figures = await rawFigures(this.ctx.database, { sessions: ids, maxSeq }, { ngrams: true, patterns: true });
    await this.write(ids, new Map(sessions.map((s) => [s.id, s.last_hash])), figures);
  }

  /** Replaces the states of `ids`: those with a head get the figures, the others are dropped. */
  private async write(ids: string[], heads: Map<string, string>, figures: Map<string, SessionFigures>): Promise<void> {
    const sessions: ObserveSchema['reflect_sessions'][] = [];
    const ngrams: ObserveSchema['reflect_ngrams'][] = [];
    const errors: ObserveSchema['reflect_errors'][] = [];
    const preceding: ObserveSchema['reflect_preceding'][] = [];
    for (const [id, head] of heads) {
      const f = figures.get(id);
      const any = f !== undefined && f.minTs !== Infinity;
      sessions.push({
        session_id: id,
        head_hash: head,
        version: REFLECT_STATE_VERSION,
        agent_id: any ? (f.agent ?? null) : null,
        min_ts: any ? f.minTs : null,
        max_ts: any ? f.maxTs : null,
      });
      if (f === undefined) continue;
      for (const [key, n] of f.ngrams) ngrams.push({ session_id: id, tools: toolsText(key), frequency: n.frequency, failed: n.failed });
      for (const [text, p] of f.patterns) {
        const pattern = JSON.stringify(text);
        errors.push({ session_id: id, pattern, count: p.count, first_ts: p.first, last_ts: p.last });
        for (const [key, count] of p.preceding) preceding.push({ session_id: id, pattern, tools: toolsText(key), count });
      }
    }
    await this.ctx.database.db.transaction().execute(async (trx) => {
      for (let i = 0; i < ids.length; i += ROWS_PER_INSERT) {
        const chunk = ids.slice(i, i + ROWS_PER_INSERT);
        for (const table of ['reflect_ngrams', 'reflect_errors', 'reflect_preceding', 'reflect_sessions'] as const)
          await trx.deleteFrom(table).where('session_id', 'in', chunk).execute();
      }
      for (const [table, rows] of [
        ['reflect_sessions', sessions],
        ['reflect_ngrams', ngrams],
        ['reflect_errors', errors],
        ['reflect_preceding', preceding],
      ] as const) {
        for (let i = 0; i < rows.length; i += ROWS_PER_INSERT)
          await trx
            .insertInto(table)
            .values(rows.slice(i, i + ROWS_PER_INSERT) as never)
            .execute();
      }
    });
  }
}
