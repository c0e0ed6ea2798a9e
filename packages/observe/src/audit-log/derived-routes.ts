// The derived data as stored, raw and paged, for `vigil verify --deep` to compare with what it
// recomputes from the chained events (docs/audit.md#--deep). Each page is one range of a primary
// key after the cursor, so reading everything is one pass over each table in index order.
import { type ZodApp } from '@vigil/platform';
import { sql } from 'kysely';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import type { ObserveSchema } from '../schema.ts';
import { ROLLUP_KEY, ROLLUP_SUMS } from '../analytics/index.ts';
import { EVENT_DERIVED_COLUMNS } from '../events/index.ts';
import { SESSION_DERIVED_FIELDS } from './derived.ts';

const DEFAULT_PAGE = 1000;
const MAX_PAGE = 5000;

type KeyKind = 'string' | 'number';

/** One listing: its table, primary key (the keyset order), the columns answered and which of them are numbers. */
interface Listing {
  table: keyof ObserveSchema & ('events' | 'sessions' | 'event_rollups' | 'latency_sketches');
  key: readonly { column: string; kind: KeyKind }[];
  columns: readonly string[];
  numeric: ReadonlySet<string>;
}

/** A cursor: the key of a page's last row, base64url JSON, opaque to clients. */
const encodeCursor = (values: readonly unknown[]): string => Buffer.from(JSON.stringify(values)).toString('base64url');

function cursorSchema(key: Listing['key']) {
  return z
    .string()
    .max(4000)
    .transform((text, ctx): unknown[] => {
      try {
        const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
        if (
          Array.isArray(value) &&
          value.length === key.length &&
          value.every((v, i) => (key[i]!.kind === 'number' ? Number.isSafeInteger(v) : typeof v === 'string' && v.length <= 1000))
        ) {
          return value;
        }
      } catch {
        // Not JSON: reported below like any other foreign cursor.
      }
      ctx.addIssue({ code: 'custom', message: 'cursor is not one this endpoint issued; pass nextCursor unchanged' });
      return z.NEVER;
    })
    .meta({ type: 'string' });
}

const pageQuery = (key: Listing['key']) =>
  z.object({
    cursor: cursorSchema(key).optional().describe('nextCursor of the previous page; absent for the first'),
    limit: z.coerce.number().int().min(1).max(MAX_PAGE).default(DEFAULT_PAGE),
  });

const n = z.number();
const nn = z.number().nullable();
const sn = z.string().nullable();

const EVENT_LISTING: Listing = {
  table: 'events',
  key: [{ column: 'id', kind: 'string' }],
  columns: ['id', 'session_id', 'seq', 'ts', 'agent_id', 'event_type', ...EVENT_DERIVED_COLUMNS],
  numeric: new Set(['seq', 'ts', 'is_error', 'cost_usd', 'duration_ms', 'latency_ms', 'input_tokens', 'output_tokens']),
};
const eventRow = z.object({
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
});

const SESSION_LISTING: Listing = {
  table: 'sessions',
  key: [{ column: 'id', kind: 'string' }],
  columns: ['id', ...SESSION_DERIVED_FIELDS, 'last_seq'],
  numeric: new Set(['started_at', 'ended_at', 'last_event_at', 'event_count', 'tool_call_count', 'error_count', 'total_cost_usd', 'last_seq']),
};
const sessionRow = z.object({
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
});

const text = (column: string) => ({ column, kind: 'string' as const });
const ROLLUP_LISTING: Listing = {
  table: 'event_rollups',
  key: ROLLUP_KEY.map((column) => (column === 'hour' ? { column, kind: 'number' as const } : text(column))),
  columns: [...ROLLUP_KEY, ...ROLLUP_SUMS],
  numeric: new Set(['hour', ...ROLLUP_SUMS]),
};
const rollupRow = z.object({
  hour: n,
  agent_id: z.string(),
  event_type: z.string(),
  tool_name: z.string(),
  provider: z.string(),
  model: z.string(),
  tier: z.string(),
  event_count: n,
  error_count: n,
  cost_usd: n,
  duration_sum: n,
  duration_count: n,
  latency_sum: n,
  latency_count: n,
  input_tokens: n,
  output_tokens: n,
  failure_count: n,
});

const SKETCH_LISTING: Listing = {
  table: 'latency_sketches',
  key: [
    { column: 'hour', kind: 'number' },
    text('agent_id'),
    text('metric'),
    text('tool_name'),
    text('provider'),
    text('model'),
    { column: 'bin', kind: 'number' },
  ],
  columns: ['hour', 'agent_id', 'metric', 'tool_name', 'provider', 'model', 'bin', 'count'],
  numeric: new Set(['hour', 'bin', 'count']),
};
const sketchRow = z.object({
  hour: n,
  agent_id: z.string(),
  metric: z.enum(['tool', 'llm']),
  tool_name: z.string(),
  provider: z.string(),
  model: z.string(),
  bin: n,
  count: n,
});

/** One page of a listing after `cursor`, numbers as numbers (PostgreSQL answers bigint as text). */
async function readPage(ctx: ObserveContext, listing: Listing, cursor: unknown[] | undefined, limit: number) {
  const keyColumns = listing.key.map((k) => sql.ref(k.column));
  let query = ctx.database.db
    .selectFrom(listing.table)
    .select(listing.columns.map((c) => sql.ref(c).as(c)) as never)
    .orderBy(sql.join(keyColumns) as never)
    .limit(limit + 1);
  if (cursor !== undefined) query = query.where(sql<boolean>`(${sql.join(keyColumns)}) > (${sql.join(cursor)})`);
  const rows = (await query.execute()) as Record<string, unknown>[];
  const page = rows.slice(0, limit).map((row) => {
    for (const column of listing.numeric) if (row[column] !== null) row[column] = Number(row[column]);
    return row;
  });
  const last = page.at(-1);
  return { rows: page, nextCursor: rows.length > limit && last ? encodeCursor(listing.key.map((k) => last[k.column])) : null };
}

const PAGING =
  'Raw, as stored (column names as in the database), for `vigil verify --deep` to compare with what it recomputes from the chained events (docs/audit.md#--deep). ' +
  'Pages by cursor in primary-key order: pass `nextCursor` as `cursor` until it is null.';

export function registerDerivedDataRoutes(app: ZodApp, ctx: ObserveContext): void {
  const list = <Row extends z.ZodType>(url: string, operationId: string, summary: string, listing: Listing, row: Row) =>
    app.get(
      url,
      {
        config: { scope: 'read' },
        schema: {
          operationId,
          summary,
          description: PAGING,
          tags: ['audit'],
          querystring: pageQuery(listing.key),
          response: { 200: z.object({ rows: z.array(row), nextCursor: z.string().nullable() }) },
        },
      },
      // The rows are the listing's columns, which its response schema describes.
      async (request) => (await readPage(ctx, listing, request.query.cursor, request.query.limit)) as { rows: z.infer<Row>[]; nextCursor: string | null },
    );
  list('/api/audit/derived/events', 'listStoredEventDerivedColumns', "Every stored event's columns derived at ingest, with its place", EVENT_LISTING, eventRow);
  list(
    '/api/audit/derived/sessions',
    'listStoredSessionCounters',
    "Every session row's counters, cost, status and times as stored",
    SESSION_LISTING,
    sessionRow,
  );
  list('/api/audit/derived/rollups', 'listStoredRollups', 'Every hourly rollup row as stored', ROLLUP_LISTING, rollupRow);
  list('/api/audit/derived/latency-sketches', 'listStoredLatencySketches', 'Every latency sketch bin as stored', SKETCH_LISTING, sketchRow);
}
