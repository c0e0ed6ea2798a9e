// Frozen copies of analytics' rollup and latency-sketch code as migrations 0003, 0015 and 0025 ran
// it (analytics/rollups.ts and analytics/latency.ts then): the tables, and their rows rebuilt
// from the stored events. Migration 0050 creates the daily tables with the same columns.
import { DDSketch } from '@datadog/sketches-js';
import { epochMsType, floatType, HOUR_MS, type MigrationDb } from '@vigil/platform';
import { NANOS_PER_USD } from '@vigil/pricing';
import { sql } from 'kysely';
import { sumNanosSql } from './events.ts';

const ROLLUP_KEY = ['hour', 'agent_id', 'event_type', 'tool_name', 'provider', 'model', 'tier'] as const;
export const ROLLUP_SUMS = [
  'event_count',
  'error_count',
  'cost_usd',
  'duration_sum',
  'duration_count',
  'latency_sum',
  'latency_count',
  'input_tokens',
  'output_tokens',
  'failure_count',
] as const;

export async function createRollupTable(db: MigrationDb, name = 'event_rollups'): Promise<void> {
  let table = db.schema
    .createTable(name)
    .addColumn('hour', epochMsType, (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('tool_name', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('tier', 'text', (c) => c.notNull());
  for (const column of ROLLUP_SUMS) {
    table = table.addColumn(column, column === 'cost_usd' || column.endsWith('_sum') ? floatType : epochMsType, (c) => c.notNull());
  }
  await table.addPrimaryKeyConstraint(`${name}_pk`, [...ROLLUP_KEY]).execute();
  await db.schema.createIndex(`${name}_agent_hour`).on(name).columns(['agent_id', 'hour']).execute();
}

/** The rollups of every stored event, computed in SQL (spend summed in whole nano-dollars). */
export async function backfillRollups(db: MigrationDb): Promise<void> {
  await sql`insert into event_rollups (${sql.raw([...ROLLUP_KEY, ...ROLLUP_SUMS].join(', '))})
    select (ts / ${sql.lit(HOUR_MS)}) * ${sql.lit(HOUR_MS)} as hour, agent_id, event_type, coalesce(tool_name, '') as tool_name,
      coalesce(provider, '') as provider, coalesce(model, '') as model, coalesce(complexity_tier, '') as tier,
      count(*) as event_count, sum(is_error) as error_count, ${sumNanosSql('cost_usd')} / ${sql.lit(NANOS_PER_USD)} as cost_usd,
      coalesce(sum(duration_ms), 0) as duration_sum, count(duration_ms) as duration_count,
      coalesce(sum(latency_ms), 0) as latency_sum, count(latency_ms) as latency_count,
      coalesce(sum(input_tokens), 0) as input_tokens, coalesce(sum(output_tokens), 0) as output_tokens,
      sum(case when finish_reason = 'error' then 1 else 0 end) as failure_count
    from events
    where true
    group by 1, 2, 3, 4, 5, 6, 7
    order by 1, 2, 3, 4, 5, 6, 7`.execute(db);
}

const SKETCH_KEY = ['hour', 'agent_id', 'metric', 'tool_name', 'provider', 'model', 'bin'] as const;

export async function createLatencySketchTable(db: MigrationDb, name = 'latency_sketches'): Promise<void> {
  await db.schema
    .createTable(name)
    .addColumn('hour', epochMsType, (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('metric', 'text', (c) => c.notNull())
    .addColumn('tool_name', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('bin', 'integer', (c) => c.notNull())
    .addColumn('count', epochMsType, (c) => c.notNull())
    .addPrimaryKeyConstraint(`${name}_pk`, [...SKETCH_KEY])
    .execute();
}

/** DDSketch's logarithmic mapping at 1 % relative accuracy; zero (and negative) values share one bin below every other. */
const mapping = new DDSketch({ relativeAccuracy: 0.01 }).mapping;
const ZERO_BIN = -1_000_000;
const binOf = (ms: number): number => (ms < mapping.minPossible ? ZERO_BIN : mapping.key(ms));

interface TimedEvent {
  id: string;
  ts: number;
  agent_id: string;
  tool_name: string | null;
  provider: string | null;
  model: string | null;
  duration_ms: number | null;
  latency_ms: number | null;
}

interface SketchRow {
  hour: number;
  agent_id: string;
  metric: 'tool' | 'llm';
  tool_name: string;
  provider: string;
  model: string;
  bin: number;
  count: number;
}

const BACKFILL_PAGE = 5_000;
const ROWS_PER_STATEMENT = 500;

/**
 * The sketch bins of every stored event, a page of events at a time: tool durations by tool,
 * LLM latencies by provider and model, per hour and agent.
 */
export async function backfillSketches(db: MigrationDb): Promise<void> {
  let after = '';
  for (;;) {
    const page = (await db
      .selectFrom('events')
      .select(['id', 'ts', 'agent_id', 'tool_name', 'provider', 'model', 'duration_ms', 'latency_ms'])
      .where((eb) => eb.or([eb('duration_ms', 'is not', null), eb('latency_ms', 'is not', null)]))
      .where('id', '>', after)
      .orderBy('id')
      .limit(BACKFILL_PAGE)
      .execute()) as TimedEvent[];
    if (page.length === 0) return;
    const rows = new Map<string, SketchRow>();
    const count = (e: TimedEvent, metric: 'tool' | 'llm', value: number) => {
      const hour = Math.floor(Number(e.ts) / HOUR_MS) * HOUR_MS;
      const row: SketchRow = {
        hour,
        agent_id: e.agent_id,
        metric,
        tool_name: metric === 'tool' ? (e.tool_name ?? '') : '',
        provider: metric === 'llm' ? (e.provider ?? '') : '',
        model: metric === 'llm' ? (e.model ?? '') : '',
        bin: binOf(value),
        count: 0,
      };
      const key = JSON.stringify(SKETCH_KEY.map((k) => row[k]));
      const counted = rows.get(key) ?? row;
      counted.count += 1;
      rows.set(key, counted);
    };
    for (const e of page) {
      if (e.duration_ms !== null) count(e, 'tool', Number(e.duration_ms));
      if (e.latency_ms !== null) count(e, 'llm', Number(e.latency_ms));
    }
    const deltas = [...rows.values()];
    for (let offset = 0; offset < deltas.length; offset += ROWS_PER_STATEMENT) {
      await db
        .insertInto('latency_sketches')
        .values(deltas.slice(offset, offset + ROWS_PER_STATEMENT))
        .onConflict((oc) => oc.columns([...SKETCH_KEY]).doUpdateSet({ count: sql`latency_sketches.count + excluded.count` }))
        .execute();
    }
    after = page.at(-1)!.id;
  }
}
