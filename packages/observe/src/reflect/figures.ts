/**
 * What error_patterns and tool_sequences count, session by session, read from the events: the
 * one computation behind both the answers over raw rows and the per-session state kept for whole
 * sessions (state.ts). Every figure of both analyses adds up over sessions, so an answer is the
 * sum of its sessions' figures, each taken from the state or from the rows.
 */
import { sql, type ExpressionBuilder, type Kysely, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import { PatternCache } from './normalise.ts';
import { forEachBatch, jsonString, STREAM_BATCH } from './stream.ts';

/** n-gram sizes of tool_sequences. */
export const SEQUENCE_SIZES = [2, 3] as const;
/** Tool calls looked back from an error occurrence. */
export const PRECEDING_TOOLS = 3;
const MAX_N = Math.max(...SEQUENCE_SIZES);

// Tool names never hold NUL, so it can join them into a key.
export const SEPARATOR = '\u0000';

export interface NgramFigures {
  /** Occurrences (overlapping runs count separately: a→a→a holds a→a twice). */
  frequency: number;
  /** Occurrences in which at least one of the n calls ran into a tool_error. */
  failed: number;
}

export interface PatternFigures {
  count: number;
  first: number;
  last: number;
  /** Key of the (up to 3) tool names before an occurrence, joined by NUL → occurrences. */
  preceding: Map<string, number>;
}

/** One session's figures over the rows read of it. */
export class SessionFigures {
  /** Key of the tool names joined by NUL → figures. */
  readonly ngrams = new Map<string, NgramFigures>();
  readonly patterns = new Map<string, PatternFigures>();
  /** The agent of every row read; null when they differ (undefined while none was read). */
  agent: string | null | undefined = undefined;
  minTs = Infinity;
  maxTs = -Infinity;
  /** Error occurrences in seq order of arrival, matched against the tool calls for `preceding`. */
  occurrences: { seq: number; pattern: PatternFigures }[] = [];
  /** callId → the highest seq of a tool_error for it. */
  failures = new Map<string, number>();

  saw(agent: string, ts: number): void {
    if (this.agent === undefined) this.agent = agent;
    else if (this.agent !== agent) this.agent = null;
    if (ts < this.minTs) this.minTs = ts;
    if (ts > this.maxTs) this.maxTs = ts;
  }
}

export interface RawScope {
  /** Inclusive bounds, epoch ms; none: every event. */
  from?: number;
  to?: number;
  agentId?: string;
  /** Only these sessions (read through the per-session indexes), or every session of the range. */
  sessions?: readonly string[];
  /** Sessions left out (read elsewhere) when `sessions` is not given. */
  skip?: ReadonlySet<string>;
  /** Per session, the highest seq read (the rows of a session's head as it was when read). */
  maxSeq?: ReadonlyMap<string, number>;
}

export interface RawWanted {
  ngrams: boolean;
  patterns: boolean;
}

/** Knobs of the streaming passes, changed only by tests (to drive both paths and batch edges). */
export const reflectTuning = {
  /** Sessions read through the per-session indexes at most; more are read as the whole range, others skipped. */
  sessionFilterMax: 500,
  /** Rows per batch of a streamed query. */
  batchSize: STREAM_BATCH,
};

type Eb = ExpressionBuilder<ObserveSchema, 'events'>;

function scoped<O>(q: SelectQueryBuilder<ObserveSchema, 'events', O>, scope: RawScope, sessionsListed: boolean, time: RawBuilder<number> = sql<number>`ts`) {
  if (scope.from !== undefined) q = q.where(time, '>=', scope.from);
  if (scope.to !== undefined) q = q.where(time, '<=', scope.to);
  if (scope.agentId !== undefined) q = q.where('agent_id', '=', scope.agentId);
  if (sessionsListed) q = q.where('session_id', 'in', [...scope.sessions!]);
  return q;
}

/**
 * The text of an error event, in this order (first non-empty string): tool_error: payload.error,
 * payload.error.message, payload.message, payload.reason; any other error event: payload.message,
 * payload.error, payload.error.message, payload.reason, payload.data.message, payload.data.error.
 * Null when none (the pattern is then "<eventType> (no message)"). Cut to 2,000 characters.
 */
function errorText(dialect: ObserveDatabase['dialect']) {
  const field = (...path: string[]) => sql`nullif(${jsonString(dialect, 'payload', path)}, '')`;
  return sql<string | null>`substr(case when event_type = 'tool_error'
    then coalesce(${field('error')}, ${field('error', 'message')}, ${field('message')}, ${field('reason')})
    else coalesce(${field('message')}, ${field('error')}, ${field('error', 'message')}, ${field('reason')}, ${field('data', 'message')}, ${field('data', 'error')})
    end, 1, 2000)`;
}

/**
 * Reads the figures of the sessions in scope from their events: error events (patterns), tool
 * errors with a callId (which calls failed) and the tool calls in (session, seq) order (n-grams and
 * the tools before each error). Only events of the scope's range and agent count, exactly as the
 * answers define: an n-gram is a run of consecutive tool calls among those read.
 */
export async function rawFigures(database: ObserveDatabase, scope: RawScope, wanted: RawWanted): Promise<Map<string, SessionFigures>> {
  const db: Kysely<ObserveSchema> = database.db;
  const listed = scope.sessions !== undefined;
  if (listed && scope.sessions!.length === 0) return new Map();
  const figures = new Map<string, SessionFigures>();
  const of = (session: string): SessionFigures | undefined => {
    if (!listed && scope.skip?.has(session)) return undefined;
    let f = figures.get(session);
    if (f === undefined) {
      f = new SessionFigures();
      figures.set(session, f);
    }
    return f;
  };
  const beyondHead = (session: string, seq: number): boolean => {
    const max = scope.maxSeq?.get(session);
    return max !== undefined && seq > max;
  };
  const batch = reflectTuning.batchSize;

  if (wanted.patterns) {
    const patterns = new PatternCache();
    // is_error = 1 is the one definition of an error event. Listed sessions are read through the
    // partial index of error events by session (migration 0021); a range through the severity /
    // tool_error disjunction, which states the same thing in columns indexed with the time.
    let errors = scoped(db.selectFrom('events'), scope, listed)
      .select(['session_id', 'seq', 'ts', 'agent_id', 'event_type', errorText(database.dialect).as('message')])
      .where('is_error', '=', 1);
    if (!listed) errors = errors.where((eb: Eb) => eb.or([eb('severity', 'in', ['error', 'critical']), eb('event_type', '=', 'tool_error')]));
    await forEachBatch(
      database,
      errors,
      (rows) => {
        for (const row of rows as { session_id: string; seq: number; ts: number; agent_id: string; event_type: string; message: string | null }[]) {
          const seq = Number(row.seq);
          if (beyondHead(row.session_id, seq)) continue;
          const f = of(row.session_id);
          if (f === undefined) continue;
          const ts = Number(row.ts);
          f.saw(row.agent_id, ts);
          const text = row.message === null ? `${row.event_type} (no message)` : patterns.pattern(String(row.message));
          let pattern = f.patterns.get(text);
          if (pattern === undefined) {
            pattern = { count: 0, first: ts, last: ts, preceding: new Map() };
            f.patterns.set(text, pattern);
          }
          pattern.count += 1;
          if (ts < pattern.first) pattern.first = ts;
          if (ts > pattern.last) pattern.last = ts;
          f.occurrences.push({ seq, pattern });
        }
      },
      batch,
    );
  }

  if (wanted.ngrams) {
    const toolErrors = scoped(db.selectFrom('events'), scope, listed)
      .select(['session_id', 'seq', 'ts', 'agent_id', 'call_id'])
      .where('event_type', '=', 'tool_error')
      .where('call_id', 'is not', null);
    await forEachBatch(
      database,
      toolErrors,
      (rows) => {
        for (const row of rows as { session_id: string; seq: number; ts: number; agent_id: string; call_id: string }[]) {
          const seq = Number(row.seq);
          if (beyondHead(row.session_id, seq)) continue;
          const f = of(row.session_id);
          if (f === undefined) continue;
          f.saw(row.agent_id, Number(row.ts));
          f.failures.set(row.call_id, Math.max(f.failures.get(row.call_id) ?? -1, seq));
        }
      },
      batch,
    );
  }

  // The tool calls: every session's for n-grams; for the preceding tools alone, only the sessions
  // with an error occurrence (through the per-session index when they are few).
  let callSessions: readonly string[] | undefined = scope.sessions;
  if (!wanted.ngrams) {
    const withErrors = [...figures.entries()].filter(([, f]) => f.occurrences.length > 0).map(([id]) => id);
    if (withErrors.length === 0) return figures;
    if (withErrors.length <= reflectTuning.sessionFilterMax) callSessions = withErrors;
  }
  const callScope: RawScope = { ...scope, sessions: callSessions };
  // The tool-call index (event_type, session_id, seq, ts, tool_name, call_id, agent_id), partial on
  // tool calls (migrations 0018, 0020), holds every column read, in that order. The range is written on `+ts` so that SQLite's planner, which keeps no
  // statistics, does not take the (event_type, ts) index instead and sort every tool call of the
  // range (PostgreSQL reads `+ts` as ts).
  const calls = scoped(db.selectFrom('events'), callScope, callSessions !== undefined, sql<number>`+ts`)
    .select(['session_id', 'seq', 'ts', 'agent_id', 'tool_name', 'call_id'])
    .where('event_type', '=', 'tool_call')
    .orderBy('session_id')
    .orderBy('seq');

  let current: string | undefined;
  let f: SessionFigures | undefined;
  let window: { tool: string; failed: boolean }[] = [];
  let next = 0;
  const record = (occurrence: { pattern: PatternFigures }) => {
    if (window.length === 0) return;
    const key = window
      .slice(-PRECEDING_TOOLS)
      .map((c) => c.tool)
      .join(SEPARATOR);
    occurrence.pattern.preceding.set(key, (occurrence.pattern.preceding.get(key) ?? 0) + 1);
  };
  const flush = () => {
    if (f !== undefined) for (; next < f.occurrences.length; next++) record(f.occurrences[next]!);
  };
  const enter = (session: string) => {
    flush();
    current = session;
    // For the preceding tools alone, only sessions with an error occurrence (made by the errors pass).
    f = wanted.ngrams ? of(session) : figures.get(session);
    // Error occurrences in seq order, to merge with the calls.
    f?.occurrences.sort((a, b) => a.seq - b.seq);
    next = 0;
    window = [];
  };
  await forEachBatch(
    database,
    calls,
    (rows) => {
      for (const row of rows as { session_id: string; seq: number; ts: number; agent_id: string; tool_name: string | null; call_id: string | null }[]) {
        if (row.session_id !== current) enter(row.session_id);
        if (f === undefined) continue;
        const seq = Number(row.seq);
        if (beyondHead(row.session_id, seq)) continue;
        if (!wanted.ngrams && f.occurrences.length === 0) continue;
        f.saw(row.agent_id, Number(row.ts));
        for (; next < f.occurrences.length && f.occurrences[next]!.seq < seq; next++) record(f.occurrences[next]!);
        const failedAt = row.call_id === null ? undefined : f.failures.get(row.call_id);
        window.push({ tool: row.tool_name ?? '', failed: failedAt !== undefined && failedAt > seq });
        if (window.length > MAX_N) window.shift();
        if (!wanted.ngrams) continue;
        for (const n of SEQUENCE_SIZES) {
          if (window.length < n) continue;
          const run = window.slice(window.length - n);
          const key = run.map((c) => c.tool).join(SEPARATOR);
          let counts = f.ngrams.get(key);
          if (counts === undefined) {
            counts = { frequency: 0, failed: 0 };
            f.ngrams.set(key, counts);
          }
          counts.frequency += 1;
          if (run.some((c) => c.failed)) counts.failed += 1;
        }
      }
    },
    batch,
  );
  flush();
  return figures;
}
