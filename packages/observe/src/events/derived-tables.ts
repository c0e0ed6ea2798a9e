// Derived tables: rows that ingest derives from the events it appends (per-event columns, session
// counters, store totals, hourly rollups, latency sketches). Each owning feature declares its own
// behind this one interface; the service registers them in order (app.ts), and the ingest
// transaction, retention, `vigil verify --deep` and its /api/audit/derived/* listings iterate that list.
import type { DialectName } from '@vigil/platform';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { z } from 'zod';
import type { ObserveSchema } from '../schema.ts';
import type { DerivedColumns } from './derive.ts';
import type { CommittingBatch } from './ingest.ts';

/** The sessions one retention transaction deletes whole, before their rows are deleted. */
export interface ExpiringSessions {
  ids: readonly string[];
  /** Their events (the sum of their event_count). */
  events: number;
}

/** A walked chained event as `verify --deep` recomputes from it: its chained fields and the columns derived from its payload. */
export interface RecomputedEvent {
  id: string;
  sessionId: string;
  seq: number;
  ts: number;
  agentId: string;
  eventType: string;
  payload: Record<string, unknown>;
  columns: DerivedColumns;
}

/** A stored event the walk did not reach (appended since, or stored outside any chain): its stored columns. */
export interface UnwalkedEvent {
  ts: number;
  agentId: string;
  eventType: string;
  columns: DerivedColumns;
}

/** Recomputed rows by key (the listing's `key` of a row), each taken once as its stored row is read. */
export interface RecomputedRows<Row> {
  /** The row of this key, removed; undefined when none was recomputed. */
  take(key: string): Row | undefined;
  /** The rows no stored row took. */
  remaining(): Iterable<Row>;
}

/** A table's rows recomputed from chained events fed one at a time (any order gives the same rows). */
export interface Recomputation<Row> {
  add(event: RecomputedEvent): void;
  /**
   * Tables that sum over events count an unwalked event from its stored columns, so that they
   * differ from what is stored only where derivation does; per-event and per-session rows ignore
   * it (the audit leaves those rows to the chain verification).
   */
  addUnwalked(event: UnwalkedEvent): void;
  rows(): RecomputedRows<Row>;
}

/** How a derived table is listed as stored (GET /api/audit/derived/{path}) and recomputed for `vigil verify --deep`. */
export interface DerivedAudit<Stored extends object, Recomputed extends object = Stored> {
  path: string;
  /** The listing's OpenAPI operationId (what typed clients call it). */
  operationId: string;
  summary: string;
  /** The primary key, in keyset order. */
  key: readonly { column: string; kind: 'string' | 'number' }[];
  /** The columns answered (database names), and those that are numbers (PostgreSQL answers bigint as text). */
  columns: readonly string[];
  numeric: ReadonlySet<string>;
  /** One listed row, as the route's response schema describes it. */
  row: z.ZodType<Stored>;
  /** The key of a stored row and of the recomputed row it is compared with. */
  keyOf(row: Stored | Recomputed): string;
  recompute(): Recomputation<Recomputed>;
}

/**
 * A table ingest derives from events. Every member but the name is optional, as every table does
 * not need each: the events' and sessions' columns are written by ingest with the chained rows
 * themselves and deleted by retention with them (no apply, no subtract); the store totals are not
 * listed for `--deep`.
 */
export interface DerivedTable<Stored extends object = object, Recomputed extends object = Stored> {
  /** The table, as named in the database. */
  table: keyof ObserveSchema & string;
  /** Kept in the ingest transaction, after the agents rows (WriterPosition `sharedRows`), in registration order. */
  apply?: (batch: CommittingBatch) => Promise<void>;
  /** Takes the expiring sessions' share out, in retention's transaction, while their events are still stored. */
  subtract?: (trx: Transaction<ObserveSchema>, dialect: DialectName, sessions: ExpiringSessions) => Promise<void>;
  /** Rebuilds the rows from every stored event into an empty table (a migration that adds one, or a repair). */
  backfill?: (db: Kysely<ObserveSchema>) => Promise<void>;
  audit?: DerivedAudit<Stored, Recomputed>;
}

/** A table with its audit, for the listings and `--deep`. */
export type AuditedTable = DerivedTable<object, object> & { audit: DerivedAudit<object, object> };

export const isAudited = (table: DerivedTable<object, object>): table is AuditedTable => table.audit !== undefined;

/** Recomputed rows kept in a map by key. */
export class KeyedRows<Row> implements RecomputedRows<Row> {
  constructor(private readonly byKey: Map<string, Row>) {}

  take(key: string): Row | undefined {
    const row = this.byKey.get(key);
    this.byKey.delete(key);
    return row;
  }

  remaining(): Iterable<Row> {
    return this.byKey.values();
  }
}

/** A cursor: the key of a page's last row, base64url JSON, opaque to clients. */
const encodeCursor = (values: readonly unknown[]): string => Buffer.from(JSON.stringify(values)).toString('base64url');

/** One page of a derived table as stored, after `cursor` (the key of the previous page's last row), numbers as numbers. */
export async function readDerivedPage(
  db: Kysely<ObserveSchema>,
  table: AuditedTable,
  cursor: readonly unknown[] | undefined,
  limit: number,
): Promise<{ rows: Record<string, unknown>[]; nextCursor: string | null }> {
  const { key, columns, numeric } = table.audit;
  const keyColumns = key.map((k) => sql.ref(k.column));
  let query = db
    .selectFrom(table.table)
    .select(columns.map((c) => sql.ref(c).as(c)) as never)
    .orderBy(sql.join(keyColumns) as never)
    .limit(limit + 1);
  if (cursor !== undefined) query = query.where(sql<boolean>`(${sql.join(keyColumns)}) > (${sql.join([...cursor])})`);
  const rows = (await query.execute()) as Record<string, unknown>[];
  const page = rows.slice(0, limit).map((row) => {
    for (const column of numeric) if (row[column] !== null) row[column] = Number(row[column]);
    return row;
  });
  const last = page.at(-1);
  return { rows: page, nextCursor: rows.length > limit && last ? encodeCursor(key.map((k) => last[k.column])) : null };
}
