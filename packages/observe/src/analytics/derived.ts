// The analytics feature's derived tables: hourly rollups and latency sketches, kept in the ingest
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
import { AGENT_SESSION_HOURS_TABLE } from './session-hours.ts';

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

export const ROLLUPS_TABLE: DerivedTable<RollupRow> = {
  table: 'event_rollups',
  apply: (batch) => applyRollupDeltas(batch.trx, rollupDeltas(batch.rows), 1),
  subtract: (trx, _dialect, sessions) => subtractSessionsFromRollups(trx, sessions.ids),
  backfill: backfillRollups,
  audit: {
    path: 'rollups',
    operationId: 'listStoredRollups',
    summary: 'Every hourly rollup row as stored',
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
      const sums = new RollupSums();
      return {
        add: (event) => sums.add(sourceOf(event)),
        addUnwalked: (event) => sums.add(sourceOf(event)),
        rows: () => new KeyedRows(new Map(sums.rows().map((row) => [rollupKey(row), row]))),
      };
    },
  },
};

export const LATENCY_SKETCHES_TABLE: DerivedTable<LatencySketchRow> = {
  table: 'latency_sketches',
  apply: (batch) => applySketchDeltas(batch.trx, sketchDeltas(batch.rows), 1),
  subtract: (trx, _dialect, sessions) => subtractSessionsFromSketches(trx, sessions.ids),
  backfill: backfillSketches,
  audit: {
    path: 'latency-sketches',
    operationId: 'listStoredLatencySketches',
    summary: 'Every latency sketch bin as stored',
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
      const counts = new SketchCounts();
      return {
        add: (event) => counts.add(sourceOf(event)),
        addUnwalked: (event) => counts.add(sourceOf(event)),
        rows: () => new KeyedRows(new Map(counts.rows().map((row) => [sketchKey(row), row]))),
      };
    },
  },
};

/** The analytics feature's derived tables, in the order ingest keeps them. */
export const ANALYTICS_DERIVED_TABLES = [ROLLUPS_TABLE, LATENCY_SKETCHES_TABLE, AGENT_SESSION_HOURS_TABLE] as const;
