// The events feature's derived tables: the columns ingest derives into each event row, the session
// rows' counters (both written with the chained rows themselves) and the store totals.
import { z } from 'zod';
import type { EventRow, SessionRow } from './tables.ts';
import { EVENT_DERIVED_COLUMNS, type DerivedColumns } from './derive.ts';
import { KeyedRows, type DerivedTable, type RecomputedEvent, type RecomputedRows } from './derived-tables.ts';
import { applyEventToSession, newSessionRow } from './session-state.ts';
import { addToStoreTotals, countStoreTotals } from './totals.ts';

/** An event's derived columns with its place, as listed and as recomputed from its chained event. */
export type EventDerivedRow = Pick<EventRow, 'id' | 'session_id' | 'seq'> & DerivedColumns;
export type StoredEventDerivedRow = EventDerivedRow & Pick<EventRow, 'ts' | 'agent_id' | 'event_type'>;

/**
 * The recomputed columns of every walked event, each as one short string (JSON of [sessionId, seq,
 * ...the columns of EVENT_DERIVED_COLUMNS]) until its stored row takes it: the one thing `--deep`
 * keeps per event.
 */
class EventColumnsRecomputation {
  private readonly byId = new Map<string, string>();

  add(event: RecomputedEvent): void {
    this.byId.set(event.id, JSON.stringify([event.sessionId, event.seq, ...EVENT_DERIVED_COLUMNS.map((c) => event.columns[c])]));
  }

  addUnwalked(): void {
    // An unwalked event has no recomputed columns: the chain verification reports it.
  }

  rows(): RecomputedRows<EventDerivedRow> {
    const decode = (id: string, encoded: string): EventDerivedRow => {
      const [sessionId, seq, ...values] = JSON.parse(encoded) as [string, number, ...unknown[]];
      return {
        id,
        session_id: sessionId,
        seq,
        ...(Object.fromEntries(EVENT_DERIVED_COLUMNS.map((c, i) => [c, values[i] ?? null])) as DerivedColumns),
      };
    };
    const byId = this.byId;
    return {
      take(id) {
        const encoded = byId.get(id);
        if (encoded === undefined) return undefined;
        byId.delete(id);
        return decode(id, encoded);
      },
      *remaining() {
        // Each let go as it is answered: the audit reads on after this table.
        for (const [id, encoded] of byId) {
          byId.delete(id);
          yield decode(id, encoded);
        }
      },
    };
  }
}

const n = z.number();
const nn = z.number().nullable();
const sn = z.string().nullable();

export const EVENT_COLUMNS_TABLE: DerivedTable<StoredEventDerivedRow, EventDerivedRow> = {
  table: 'events',
  audit: {
    path: 'events',
    operationId: 'listStoredEventDerivedColumns',
    summary: "Every stored event's columns derived at ingest, with its place",
    key: [{ column: 'id', kind: 'string' }],
    columns: ['id', 'session_id', 'seq', 'ts', 'agent_id', 'event_type', ...EVENT_DERIVED_COLUMNS],
    numeric: new Set(['seq', 'ts', 'is_error', 'cost_usd', 'duration_ms', 'latency_ms', 'input_tokens', 'output_tokens']),
    row: z.object({
      id: z.string(),
      session_id: z.string(),
      seq: n,
      ts: n,
      agent_id: z.string(),
      event_type: z.string(),
      is_error: n,
      cost_usd: nn,
      duration_ms: nn,
      latency_ms: nn,
      tool_name: sn,
      call_id: sn,
      provider: sn,
      model: sn,
      input_tokens: nn,
      output_tokens: nn,
      complexity_tier: sn,
      finish_reason: sn,
    }),
    keyOf: (row) => row.id,
    recompute: () => new EventColumnsRecomputation(),
  },
};

/**
 * The session row's fields that are a function of its chained events. Not here: `idle_at` (it
 * depends on SESSION_IDLE_TIMEOUT_MS when each event arrived, which no event records), the chain
 * head `last_seq`/`last_hash` (the chain verification's), and the `session_tags` rows (an index of `tags`).
 */
export const SESSION_DERIVED_FIELDS = [
  'agent_id',
  'agent_name',
  'status',
  'started_at',
  'ended_at',
  'last_event_at',
  'event_count',
  'tool_call_count',
  'error_count',
  'total_cost_usd',
  'tags',
] as const satisfies readonly (keyof SessionRow)[];
export type SessionDerivedFields = Pick<SessionRow, (typeof SESSION_DERIVED_FIELDS)[number]>;
export type SessionDerivedRow = Pick<SessionRow, 'id'> & SessionDerivedFields;
export type StoredSessionDerivedRow = SessionDerivedRow & Pick<SessionRow, 'last_seq'>;

/** What replaying one event on its session needs, kept only for an event that arrived before its predecessors. */
type PendingEvent = Pick<RecomputedEvent, 'agentId' | 'eventType' | 'ts' | 'columns' | 'payload'>;

/**
 * A session row rebuilt as ingest builds it: created from its first event (seq 0), then every
 * event applied in `seq` order, which is the order ingest applied them in. Events given out of
 * order wait until their predecessors come (or until `row()`, for a chain with gaps).
 */
class SessionReplay {
  private session: SessionRow | null = null;
  private nextSeq = 0;
  private readonly pending = new Map<number, PendingEvent[]>();

  constructor(private readonly id: string) {}

  add(seq: number, event: PendingEvent): void {
    if (seq !== this.nextSeq) {
      const waiting = this.pending.get(seq) ?? [];
      waiting.push(event);
      this.pending.set(seq, waiting);
      return;
    }
    this.apply(event);
    this.nextSeq += 1;
    for (let next = this.pending.get(this.nextSeq); next !== undefined; next = this.pending.get(this.nextSeq)) {
      this.pending.delete(this.nextSeq);
      for (const waiting of next) this.apply(waiting);
      this.nextSeq += 1;
    }
  }

  /** The row; events still waiting (after a gap in seq) are applied in seq order first. */
  row(): SessionRow {
    for (const seq of [...this.pending.keys()].sort((a, b) => a - b)) for (const waiting of this.pending.get(seq)!) this.apply(waiting);
    this.pending.clear();
    return this.session!;
  }

  private apply(event: PendingEvent): void {
    this.session ??= newSessionRow(this.id, event.agentId, event.ts);
    // No idle timeout: idle_at is not compared (see SESSION_DERIVED_FIELDS), and nothing else depends on it.
    applyEventToSession(
      this.session,
      { eventType: event.eventType, ts: event.ts, isError: event.columns.is_error === 1, costUsd: event.columns.cost_usd, payload: event.payload },
      Number.POSITIVE_INFINITY,
    );
  }
}

/** Session rows replayed event by event (each session's in seq order keeps memory to one row per session). */
class SessionCountersRecomputation {
  private readonly sessions = new Map<string, SessionReplay>();

  add(event: RecomputedEvent): void {
    let replay = this.sessions.get(event.sessionId);
    if (replay === undefined) {
      replay = new SessionReplay(event.sessionId);
      this.sessions.set(event.sessionId, replay);
    }
    replay.add(event.seq, event);
  }

  addUnwalked(): void {
    // A session with unwalked events has another head than the walk's: the audit skips it.
  }

  rows(): RecomputedRows<SessionDerivedRow> {
    const rows = new Map<string, SessionDerivedRow>();
    for (const [id, replay] of this.sessions) {
      const row = replay.row();
      rows.set(id, { id, ...(Object.fromEntries(SESSION_DERIVED_FIELDS.map((field) => [field, row[field]])) as SessionDerivedFields) });
    }
    return new KeyedRows(rows);
  }
}

export const SESSION_COUNTERS_TABLE: DerivedTable<StoredSessionDerivedRow, SessionDerivedRow> = {
  table: 'sessions',
  audit: {
    path: 'sessions',
    operationId: 'listStoredSessionCounters',
    summary: "Every session row's counters, cost, status and times as stored",
    key: [{ column: 'id', kind: 'string' }],
    columns: ['id', ...SESSION_DERIVED_FIELDS, 'last_seq'],
    numeric: new Set(['started_at', 'ended_at', 'last_event_at', 'event_count', 'tool_call_count', 'error_count', 'total_cost_usd', 'last_seq']),
    row: z.object({
      id: z.string(),
      agent_id: z.string(),
      agent_name: z.string(),
      status: z.string(),
      started_at: n,
      ended_at: nn,
      last_event_at: n,
      event_count: n,
      tool_call_count: n,
      error_count: n,
      total_cost_usd: n,
      tags: z.string().describe('JSON array, as stored'),
      last_seq: n.describe('The chain head: seq of the last appended event, -1 when none'),
    }),
    keyOf: (row) => row.id,
    recompute: () => new SessionCountersRecomputation(),
  },
};

/** The totals row (totals.ts): the first shared rows of the ingest transaction, right after the agents rows. */
export const STORE_TOTALS_TABLE: DerivedTable = {
  table: 'store_totals',
  apply: (batch) => addToStoreTotals(batch.trx, batch.dialect, { events: batch.events.length, ...batch.created }),
  subtract: (trx, dialect, sessions) => addToStoreTotals(trx, dialect, { events: -sessions.events, sessions: -sessions.ids.length, agents: 0 }),
  backfill: countStoreTotals,
};

/** The events feature's derived tables, in the order ingest keeps them. */
export const EVENTS_DERIVED_TABLES = [EVENT_COLUMNS_TABLE, SESSION_COUNTERS_TABLE, STORE_TOTALS_TABLE] as const;
