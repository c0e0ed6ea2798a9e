// `vigil verify --deep`: the derived data the server stores (per-event columns, session rows,
// hourly rollups, latency sketches) recomputed from the chained events and compared, field by
// field (docs/audit.md#--deep).
import {
  type AuditedTable,
  type ChainedEventFields,
  DerivedDataRecomputation,
  type DerivedTable,
  EVENT_DERIVED_COLUMNS,
  type EventDerivedColumns,
  type EventDerivedRow,
  type LatencySketchRow,
  movedToSystemAgent,
  OBSERVE_DERIVED_TABLES,
  ROLLUP_SUMS,
  type RollupRow,
  SESSION_DERIVED_FIELDS,
  type SessionDerivedFields,
  type SessionDerivedRow,
  type StoredEventDerivedRow,
  type StoredSessionDerivedRow,
} from '@vigil/observe';

/** A chained event as the walk parses it (the chain recipe's fields; others are ignored). */
export type ChainedEvent = ChainedEventFields;

/** One stored value that differs from the value recomputed from the chained events. */
export interface DerivedFinding {
  kind: 'derived';
  sessionId?: string;
  eventId?: string;
  seq?: number;
  /** The rollup or sketch hour, ISO 8601. */
  hour?: string;
  /** The stored column (its database name). */
  field: string;
  stored: unknown;
  recomputed: unknown;
  message: string;
}

/** Fetches one API path (with query) and answers its parsed JSON body; throws on failure. */
export type ApiGet = (path: string) => Promise<unknown>;

const PAGE = 5000;

/** Every row of a derived table's /api/audit/derived/* listing, page by page. */
async function* storedRows<Row>(get: ApiGet, table: AuditedTable): AsyncGenerator<Row> {
  const path = `/api/audit/derived/${table.audit.path}`;
  let cursor: string | null = null;
  do {
    const query: string = cursor === null ? `?limit=${PAGE}` : `?limit=${PAGE}&cursor=${encodeURIComponent(cursor)}`;
    const page = (await get(`${path}${query}`)) as { rows: Row[]; nextCursor: string | null };
    yield* page.rows;
    cursor = page.nextCursor;
  } while (cursor !== null);
}

/**
 * The stored derived columns of the erased events (`ids`), read from the events' derived listing:
 * their content is gone, so `--deep` takes what was derived from it before as given (the erasure
 * leaf vouches for the event, not for these columns).
 */
export async function storedColumnsOf(get: ApiGet, ids: ReadonlySet<string>): Promise<Map<string, EventDerivedColumns>> {
  const columns = new Map<string, EventDerivedColumns>();
  const table = OBSERVE_DERIVED_TABLES.find((t): t is AuditedTable => t.table === 'events' && 'audit' in t && t.audit !== undefined);
  if (table === undefined || ids.size === 0) return columns;
  for await (const stored of storedRows<StoredEventDerivedRow>(get, table)) {
    if (ids.has(stored.id)) columns.set(stored.id, Object.fromEntries(EVENT_DERIVED_COLUMNS.map((c) => [c, stored[c]])) as EventDerivedColumns);
  }
  return columns;
}

/**
 * Sums of money (and of durations) are doubles, and the server adds the same non-negative terms in
 * another order than the recomputation (a batch's deltas at a time, minus retention's SQL sums), so
 * the two may differ in the last bits. Adding n terms in any order stays within about n·ε·sum of the
 * exact total (ε = 2⁻⁵²); 1e-9 more covers what retention's subtraction of deleted sessions leaves
 * behind. A billionth of a dollar is below any price of a token, so no edit worth making hides in it.
 */
export function sameSum(stored: number, recomputed: number, terms: number): boolean {
  return Math.abs(stored - recomputed) <= 1e-9 + Math.max(terms, 1) * Number.EPSILON * Math.max(Math.abs(stored), Math.abs(recomputed));
}

/** Rollup sums of doubles, and the count of terms each adds up. */
const ROLLUP_FLOAT_TERMS: Partial<Record<(typeof ROLLUP_SUMS)[number], keyof RollupRow>> = {
  cost_usd: 'event_count',
  duration_sum: 'duration_count',
  latency_sum: 'latency_count',
};
const ZERO_SESSION: Partial<SessionDerivedFields> = { event_count: 0, tool_call_count: 0, error_count: 0, total_cost_usd: 0 };

const iso = (ms: number) => new Date(ms).toISOString();
const show = (value: unknown) => JSON.stringify(value);

/** How one audited derived table's stored rows are compared with the recomputed ones. */
type Comparison = (table: AuditedTable, get: ApiGet, findings: DerivedFinding[]) => Promise<void>;

/**
 * Fed every walked event once (`add`), then `finish` reads every audited derived table the server
 * registers through its listing and answers every difference. Memory: per walked event, its
 * recomputed columns as one short string (until its stored row is read); per session, one row;
 * per rollup and sketch key, one row.
 */
export class DerivedDataAudit {
  private readonly recomputation: DerivedDataRecomputation;
  /** Session id → the highest seq walked: the head the recomputed row stands for. */
  private readonly heads = new Map<string, number>();
  private skipped = 0;
  /** By table name; the events come first (their unwalked rows count in the rollups and sketches). */
  private readonly comparisons: Record<string, Comparison> = {
    events: (table, get, findings) => this.compareEvents(table, get, findings),
    sessions: (table, get, findings) => this.compareSessions(table, get, findings),
    event_rollups: (table, get, findings) => this.compareRollups(table, get, findings, 'hourly'),
    latency_sketches: (table, get, findings) => this.compareSketches(table, get, findings, 'hourly'),
    event_rollups_daily: (table, get, findings) => this.compareRollups(table, get, findings, 'daily'),
    latency_sketches_daily: (table, get, findings) => this.compareSketches(table, get, findings, 'daily'),
  };

  /** Refuses a derived table it has no comparison for: each audited table must be checked, none silently passed over. */
  constructor(tables: readonly DerivedTable[] = OBSERVE_DERIVED_TABLES) {
    this.recomputation = new DerivedDataRecomputation(tables);
    for (const table of this.recomputation.tables) {
      if (!Object.hasOwn(this.comparisons, table.table)) throw new Error(`verify --deep has no comparison for the derived table ${table.table}`);
    }
  }

  /** Sessions left out: their stored head is not the one walked (appends since, or the chain verification's finding). */
  get skippedSessions(): number {
    return this.skipped;
  }

  /** `stored`: an erased event's stored columns (storedColumnsOf), taken as they are. */
  add(event: ChainedEvent, stored?: EventDerivedColumns): void {
    this.recomputation.add(event, stored);
    this.heads.set(event.sessionId, Math.max(this.heads.get(event.sessionId) ?? -1, event.seq));
  }

  async finish(get: ApiGet): Promise<DerivedFinding[]> {
    const findings: DerivedFinding[] = [];
    for (const table of this.recomputation.tables) await this.comparisons[table.table]!(table, get, findings);
    return findings;
  }

  private async compareEvents(table: AuditedTable, get: ApiGet, findings: DerivedFinding[]): Promise<void> {
    const walked = this.recomputation.rowsOf<EventDerivedRow>(table);
    for await (const stored of storedRows<StoredEventDerivedRow>(get, table)) {
      const row = walked.take(table.audit.keyOf(stored));
      if (row === undefined) {
        // Not walked: appended since, or stored outside any chain (the chain audit's finding). Its
        // stored columns still count in the rollups, so that they differ only where derivation does.
        const columns = Object.fromEntries(EVENT_DERIVED_COLUMNS.map((c) => [c, stored[c]])) as EventDerivedColumns;
        this.recomputation.addUnwalked({ ts: stored.ts, agentId: stored.agent_id, eventType: stored.event_type, columns });
        continue;
      }
      const { session_id: sessionId, seq } = row;
      EVENT_DERIVED_COLUMNS.forEach((field) => {
        const recomputed = row[field];
        if (stored[field] === recomputed) return;
        findings.push({
          kind: 'derived',
          sessionId,
          eventId: stored.id,
          seq,
          field,
          stored: stored[field],
          recomputed,
          message: `event ${stored.id} (session ${sessionId}, seq ${seq}): ${field} is stored as ${show(stored[field])}, its chained event gives ${show(recomputed)}`,
        });
      });
    }
    for (const { id: eventId, session_id: sessionId, seq } of walked.remaining()) {
      findings.push({
        kind: 'derived',
        sessionId,
        eventId,
        seq,
        field: 'row',
        stored: null,
        recomputed: 'present',
        message: `event ${eventId} (session ${sessionId}, seq ${seq}) was walked but has no stored row any more`,
      });
    }
  }

  private async compareSessions(table: AuditedTable, get: ApiGet, findings: DerivedFinding[]): Promise<void> {
    const recomputed = this.recomputation.rowsOf<SessionDerivedRow>(table);
    for await (const stored of storedRows<StoredSessionDerivedRow>(get, table)) {
      const row = recomputed.take(table.audit.keyOf(stored));
      if (row === undefined) {
        // A row whose head names events is either newer than the walk or the chain audit's (missing
        // events); one without a head has no events, so any counter on it is forged.
        if (stored.last_seq >= 0) {
          this.skipped += 1;
          continue;
        }
        for (const [field, zero] of Object.entries(ZERO_SESSION) as [keyof SessionDerivedFields, unknown][]) {
          if (stored[field] !== zero) {
            findings.push({
              kind: 'derived',
              sessionId: stored.id,
              field,
              stored: stored[field],
              recomputed: zero,
              message: `session ${stored.id} has no event, yet its ${field} is stored as ${show(stored[field])}`,
            });
          }
        }
        continue;
      }
      if (stored.last_seq !== this.heads.get(stored.id)) {
        this.skipped += 1;
        continue;
      }
      const moved = movedToSystemAgent(stored.id, stored);
      for (const field of SESSION_DERIVED_FIELDS) {
        if (moved && (field === 'agent_id' || field === 'agent_name')) continue;
        const same = field === 'total_cost_usd' ? sameSum(stored[field], row[field], row.event_count) : stored[field] === row[field];
        if (same) continue;
        findings.push({
          kind: 'derived',
          sessionId: stored.id,
          field,
          stored: stored[field],
          recomputed: row[field],
          message: `session ${stored.id}: ${field} is stored as ${show(stored[field])}, its chained events give ${show(row[field])}`,
        });
      }
    }
    for (const row of recomputed.remaining()) {
      const sessionId = row.id;
      findings.push({
        kind: 'derived',
        sessionId,
        field: 'row',
        stored: null,
        recomputed: row.event_count,
        message: `session ${sessionId} has ${row.event_count} chained events but no session row`,
      });
    }
  }

  /** `span`: what one row sums over (the hourly or the daily table), as the findings name it. */
  private async compareRollups(table: AuditedTable, get: ApiGet, findings: DerivedFinding[], span: 'hourly' | 'daily'): Promise<void> {
    const recomputed = this.recomputation.rowsOf<RollupRow>(table);
    const compare = (stored: RollupRow | undefined, row: RollupRow | undefined) => {
      const keyed = (stored ?? row)!;
      const where = `agent ${keyed.agent_id}, ${keyed.event_type}${keyed.tool_name ? `, tool ${keyed.tool_name}` : ''}${keyed.model ? `, ${keyed.provider}/${keyed.model}` : ''}${keyed.tier ? `, tier ${keyed.tier}` : ''}`;
      for (const field of ROLLUP_SUMS) {
        const s = stored?.[field] ?? 0;
        const r = row?.[field] ?? 0;
        const terms = ROLLUP_FLOAT_TERMS[field];
        const same = terms === undefined ? s === r : sameSum(s, r, Math.max(Number(stored?.[terms] ?? 0), Number(row?.[terms] ?? 0)));
        if (same) continue;
        findings.push({
          kind: 'derived',
          hour: iso(keyed.hour),
          field,
          stored: stored === undefined ? null : s,
          recomputed: row === undefined ? null : r,
          message: `${span} rollup ${iso(keyed.hour)} (${where}): ${field} is stored as ${stored === undefined ? 'no row' : show(s)}, the chained events give ${row === undefined ? 'no row' : show(r)}`,
        });
      }
    };
    for await (const stored of storedRows<RollupRow>(get, table)) compare(stored, recomputed.take(table.audit.keyOf(stored)));
    for (const row of recomputed.remaining()) compare(undefined, row);
  }

  private async compareSketches(table: AuditedTable, get: ApiGet, findings: DerivedFinding[], span: 'hourly' | 'daily'): Promise<void> {
    const recomputed = this.recomputation.rowsOf<LatencySketchRow>(table);
    const compare = (stored: LatencySketchRow | undefined, row: LatencySketchRow | undefined) => {
      const s = stored?.count ?? 0;
      const r = row?.count ?? 0;
      if (s === r) return;
      const keyed = (stored ?? row)!;
      const what = keyed.metric === 'tool' ? `tool ${keyed.tool_name}` : `${keyed.provider}/${keyed.model}`;
      findings.push({
        kind: 'derived',
        hour: iso(keyed.hour),
        field: 'count',
        stored: s,
        recomputed: r,
        message: `${span} latency sketch ${iso(keyed.hour)} (agent ${keyed.agent_id}, ${keyed.metric} ${what}, bin ${keyed.bin}): count is stored as ${s}, the chained events give ${r}`,
      });
    };
    for await (const stored of storedRows<LatencySketchRow>(get, table)) compare(stored, recomputed.take(table.audit.keyOf(stored)));
    for (const row of recomputed.remaining()) compare(undefined, row);
  }
}
