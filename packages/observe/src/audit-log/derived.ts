// Derived data recomputed from chained events alone (`vigil verify --deep`, docs/audit.md#--deep):
// per-event columns, session rows, hourly rollups and latency sketches, each through the very
// function ingest stores them with.
import { ALERT_SESSION_PREFIX } from '../alerts/index.ts';
import { RollupSums, SketchCounts } from '../analytics/index.ts';
import { applyEventToSession, type ChainFields, deriveColumns, newSessionRow, SYSTEM_AGENT_ID, type DerivedColumns } from '../events/index.ts';
import type { LatencySketchRow, RollupRow } from '../analytics/index.ts';
import type { SessionRow } from '../events/index.ts';

/** The fields of a chained event (as the chain recipe hashes it, docs/audit.md) that derived data comes from. */
export type ChainedEventFields = Omit<ChainFields, 'payload' | 'metadata' | 'prevHash'> & { payload: Record<string, unknown> };

export { EVENT_DERIVED_COLUMNS } from '../events/index.ts';
export type EventDerivedColumns = DerivedColumns;

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

/**
 * True for a session row that migration 0012_session_idle moved, with its agent name, to the
 * system agent: an alert session whose events kept the rule's agentId they were hashed with.
 */
export function movedToSystemAgent(sessionId: string, stored: Pick<SessionRow, 'agent_id' | 'agent_name'>): boolean {
  return sessionId.startsWith(ALERT_SESSION_PREFIX) && stored.agent_id === SYSTEM_AGENT_ID && stored.agent_name === SYSTEM_AGENT_ID;
}

/** What replaying one event on its session needs, kept only for an event that arrived before its predecessors. */
interface PendingEvent {
  agentId: string;
  eventType: string;
  ts: number;
  columns: DerivedColumns;
  payload: Record<string, unknown>;
}

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

/** The rollup and sketch inputs of an event from its chained fields and derived columns. */
function analyticsSource(ts: number, agentId: string, eventType: string, columns: DerivedColumns) {
  return { ts, agent_id: agentId, event_type: eventType, ...columns };
}

/**
 * Everything ingest derives from events, recomputed from chained events fed one at a time (each
 * session's in seq order keeps memory to one row per session; any order gives the same result).
 * Rollups and sketches also take `addStored`: events the caller did not walk (appended since, or
 * stored outside any chain) counted from their stored columns, so that only the derivation differs.
 */
export class DerivedDataRecomputation {
  private readonly sessions = new Map<string, SessionReplay>();
  private readonly rollups = new RollupSums();
  private readonly sketches = new SketchCounts();

  /** Adds one chained event; answers its per-event derived columns. */
  add(event: ChainedEventFields): EventDerivedColumns {
    const columns = deriveColumns(event.eventType, event.severity, event.payload);
    const ts = Date.parse(event.timestamp);
    const source = analyticsSource(ts, event.agentId, event.eventType, columns);
    this.rollups.add(source);
    this.sketches.add(source);
    let replay = this.sessions.get(event.sessionId);
    if (replay === undefined) {
      replay = new SessionReplay(event.sessionId);
      this.sessions.set(event.sessionId, replay);
    }
    replay.add(event.seq, { agentId: event.agentId, eventType: event.eventType, ts, columns, payload: event.payload });
    return columns;
  }

  /** Counts a stored event that was not walked in the rollups and sketches, from its stored columns. */
  addStored(event: { ts: number; agentId: string; eventType: string; columns: DerivedColumns }): void {
    const source = analyticsSource(event.ts, event.agentId, event.eventType, event.columns);
    this.rollups.add(source);
    this.sketches.add(source);
  }

  /** The recomputed session rows' derived fields, by session id. */
  sessionRows(): Map<string, SessionDerivedFields> {
    const rows = new Map<string, SessionDerivedFields>();
    for (const [id, replay] of this.sessions) {
      const row = replay.row();
      rows.set(id, Object.fromEntries(SESSION_DERIVED_FIELDS.map((field) => [field, row[field]])) as SessionDerivedFields);
    }
    return rows;
  }

  rollupRows(): RollupRow[] {
    return this.rollups.rows();
  }

  sketchRows(): LatencySketchRow[] {
    return this.sketches.rows();
  }
}
