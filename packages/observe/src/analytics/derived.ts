// The analytics feature's derived tables: hourly and daily rollups and latency sketches, kept in the ingest
// transaction, subtracted by retention, rebuilt by a backfill, and recomputed by `vigil verify --deep`
// through the very functions ingest adds with (RollupSums, SketchCounts).
import { z } from 'zod';
import { KeyedRows, type DerivedTable, type RecomputedEvent, type UnwalkedEvent } from '../events/index.ts';
import type { LatencySketchRow, RollupRow } from './tables.ts';
import { applySketchDeltas, backfillSketches, SKETCH_KEY, SketchCounts, sketchDeltas, sketchKey, subtractSessionsFromSketches } from './latency.ts';
import {
  applyRollupDeltas,
  backfillRollups,
  ROLLUP_KEY,
  ROLLUP_SUMS,
  rollupDeltas,
  rollupKey,
  RollupSums,
  type RollupSource,
  subtractSessionsFromRollups,
} from './rollups.ts';
import { AGENT_SESSION_DAYS_TABLE, AGENT_SESSION_HOURS_TABLE } from './session-hours.ts';
import { DAILY, HOURLY, type Span } from './spans.ts';

/** What an event, walked or not, adds to the rollups and sketches: its place and derived columns. */
const sourceOf = (event: RecomputedEvent | UnwalkedEvent): RollupSource => ({
  ts: event.ts,
  agent_id: event.agentId,
  event_type: event.eventType,
  ...event.columns,
});

const n = z.number();
const string = (column: string) => ({ column, kind: 'string' as const });
const number = (column: string) => ({ column, kind: 'number' as const });

const rollupsTable = (span: Span): DerivedTable<RollupRow> => {
  const { listed, adjective } = span;
  return {
    table: span.rollups,
    apply: (batch) => applyRollupDeltas(batch.trx, rollupDeltas(batch.rows, span), 1, span),
    subtract: (trx, _dialect, sessions) => subtractSessionsFromRollups(trx, sessions.ids, span),
    backfill: (db) => backfillRollups(db, span),
    audit: {
      path: `rollups${listed.pathSuffix}`,
      operationId: `listStored${listed.operationWord}Rollups`,
      summary: `Every ${adjective} rollup row as stored`,
      key: ROLLUP_KEY.map((column) => (column === 'hour' ? number(column) : string(column))),
      columns: [...ROLLUP_KEY, ...ROLLUP_SUMS],
      numeric: new Set(['hour', ...ROLLUP_SUMS]),
      row: z.object({
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
      }),
      keyOf: rollupKey,
      recompute: () => {
        const sums = new RollupSums(span);
        return {
          add: (event) => sums.add(sourceOf(event)),
          addUnwalked: (event) => sums.add(sourceOf(event)),
          rows: () => new KeyedRows(new Map(sums.rows().map((row) => [rollupKey(row), row]))),
        };
      },
    },
  };
};

const sketchesTable = (span: Span): DerivedTable<LatencySketchRow> => {
  const { listed, adjective } = span;
  return {
    table: span.sketches,
    apply: (batch) => applySketchDeltas(batch.trx, sketchDeltas(batch.rows, span), 1, span),
    subtract: (trx, _dialect, sessions) => subtractSessionsFromSketches(trx, sessions.ids, span),
    backfill: (db) => backfillSketches(db, span),
    audit: {
      path: `latency-sketches${listed.pathSuffix}`,
      operationId: `listStored${listed.operationWord}LatencySketches`,
      summary: `Every ${adjective} latency sketch bin as stored`,
      key: SKETCH_KEY.map((column) => (column === 'hour' || column === 'bin' ? number(column) : string(column))),
      columns: [...SKETCH_KEY, 'count'],
      numeric: new Set(['hour', 'bin', 'count']),
      row: z.object({
        hour: n,
        agent_id: z.string(),
        metric: z.enum(['tool', 'llm']),
        tool_name: z.string(),
        provider: z.string(),
        model: z.string(),
        bin: n,
        count: n,
      }),
      keyOf: sketchKey,
      recompute: () => {
        const counts = new SketchCounts(span);
        return {
          add: (event) => counts.add(sourceOf(event)),
          addUnwalked: (event) => counts.add(sourceOf(event)),
          rows: () => new KeyedRows(new Map(counts.rows().map((row) => [sketchKey(row), row]))),
        };
      },
    },
  };
};

export const ROLLUPS_TABLE = rollupsTable(HOURLY);
export const LATENCY_SKETCHES_TABLE = sketchesTable(HOURLY);

/** The analytics feature's derived tables, in the order ingest keeps them. */
export const ANALYTICS_DERIVED_TABLES = [
  ROLLUPS_TABLE,
  LATENCY_SKETCHES_TABLE,
  AGENT_SESSION_HOURS_TABLE,
  rollupsTable(DAILY),
  sketchesTable(DAILY),
  AGENT_SESSION_DAYS_TABLE,
] as const;
