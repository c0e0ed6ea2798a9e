// Derived data recomputed from chained events alone (`vigil verify --deep`, docs/audit.md#--deep):
// every audited derived table the service registers (per-event columns, session rows, hourly
// rollups, latency sketches), each through its own recomputation, which uses the very function
// ingest stores it with.
import { ALERT_SESSION_PREFIX } from '../alerts/index.ts';
import {
  type AuditedTable,
  type ChainFields,
  type DerivedColumns,
  deriveColumns,
  type DerivedTable,
  isAudited,
  type Recomputation,
  type RecomputedRows,
  SYSTEM_AGENT_ID,
} from '../events/index.ts';
import type { SessionRow } from '../events/index.ts';

/** The fields of a chained event (as the chain recipe hashes it, docs/audit.md) that derived data comes from. */
export type ChainedEventFields = Omit<ChainFields, 'payload' | 'metadata' | 'prevHash'> & { payload: Record<string, unknown> };

export type EventDerivedColumns = DerivedColumns;

/**
 * True for a session row that migration 0012_session_idle moved, with its agent name, to the
 * system agent: an alert session whose events kept the rule's agentId they were hashed with.
 */
export function movedToSystemAgent(sessionId: string, stored: Pick<SessionRow, 'agent_id' | 'agent_name'>): boolean {
  return sessionId.startsWith(ALERT_SESSION_PREFIX) && stored.agent_id === SYSTEM_AGENT_ID && stored.agent_name === SYSTEM_AGENT_ID;
}

/**
 * Everything ingest derives from events, recomputed from chained events fed one at a time: one
 * recomputation per audited table of `tables` (each session's events in seq order keeps memory to
 * one row per session; any order gives the same result).
 */
export class DerivedDataRecomputation {
  readonly tables: readonly AuditedTable[];
  private readonly recomputations = new Map<string, Recomputation<object>>();

  constructor(tables: readonly DerivedTable[]) {
    this.tables = tables.filter(isAudited);
    for (const table of this.tables) this.recomputations.set(table.table, table.audit.recompute());
  }

  /**
   * Adds one chained event to every table. `stored`: the columns stored for an erased event (its
   * content, which they were derived from, is gone: docs/guide/erasure.md), taken as they are.
   */
  add(event: ChainedEventFields, stored?: DerivedColumns): void {
    const columns = stored ?? deriveColumns(event.eventType, event.severity, event.payload);
    const recomputed = {
      id: event.id,
      sessionId: event.sessionId,
      seq: event.seq,
      ts: Date.parse(event.timestamp),
      agentId: event.agentId,
      eventType: event.eventType,
      payload: event.payload,
      columns,
    };
    for (const recomputation of this.recomputations.values()) recomputation.add(recomputed);
  }

  /** Counts a stored event that was not walked, from its stored columns (Recomputation.addUnwalked). */
  addUnwalked(event: { ts: number; agentId: string; eventType: string; columns: DerivedColumns }): void {
    for (const recomputation of this.recomputations.values()) recomputation.addUnwalked(event);
  }

  /** The table's recomputed rows, by its audit's key. */
  rowsOf<Row extends object>(table: AuditedTable): RecomputedRows<Row> {
    return this.recomputations.get(table.table)!.rows() as RecomputedRows<Row>;
  }
}
