import { compareCodeUnits, type DdlTarget } from '@vigil/platform';
import { addUsd, NANOS_PER_USD } from '@vigil/pricing';
import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { ObserveSchema } from '../schema.ts';
import type { RollupRow } from './tables.ts';
import { HOURLY, spanStart, type Span } from './spans.ts';
import { TupleIndex } from './tuple-index.ts';
import type { EventRow } from '../events/index.ts';
import { addUsdSql, sumNanosSql } from '../events/index.ts';

/** An hourly rollup's key columns and its sums: the one list the table, ingest, retention and `verify --deep` share. */
export const ROLLUP_KEY = ['hour', 'agent_id', 'event_type', 'tool_name', 'provider', 'model', 'tier'] as const;
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

/** The rollup rows over `span` of the stored events that `where` selects, computed in SQL (spend summed in whole nano-dollars, as ingest adds it). */
function rollupsOfEvents(where: RawBuilder<unknown>, span: Span) {
  return sql`
    select (ts / ${sql.lit(span.ms)}) * ${sql.lit(span.ms)} as hour, agent_id, event_type, coalesce(tool_name, '') as tool_name,
      coalesce(provider, '') as provider, coalesce(model, '') as model, coalesce(complexity_tier, '') as tier,
      count(*) as event_count, sum(is_error) as error_count, ${sumNanosSql('cost_usd')} / ${sql.lit(NANOS_PER_USD)} as cost_usd,
      coalesce(sum(duration_ms), 0) as duration_sum, count(duration_ms) as duration_count,
      coalesce(sum(latency_ms), 0) as latency_sum, count(latency_ms) as latency_count,
      coalesce(sum(input_tokens), 0) as input_tokens, coalesce(sum(output_tokens), 0) as output_tokens,
      sum(case when finish_reason = 'error' then 1 else 0 end) as failure_count
    from events
    where ${where}
    group by 1, 2, 3, 4, 5, 6, 7
    order by 1, 2, 3, 4, 5, 6, 7`;
}

/** Rebuilds the rollups over `span` of every stored event into its empty table (a repair). */
export async function backfillRollups(db: DdlTarget, span: Span): Promise<void> {
  await sql`insert into ${sql.table(span.rollups)} (${sql.raw([...ROLLUP_KEY, ...ROLLUP_SUMS].join(', '))}) ${rollupsOfEvents(sql`true`, span)}`.execute(db);
}

/** Rollup rows as numbers and strings (PostgreSQL answers sum(bigint) as numeric text). */
function normalised(rows: readonly Record<string, unknown>[]): RollupRow[] {
  return rows.map((row) => {
    const out = Object.fromEntries(ROLLUP_KEY.map((k) => [k, k === 'hour' ? Number(row[k]) : String(row[k])]));
    for (const column of ROLLUP_SUMS) out[column] = Number(row[column]);
    return out as unknown as RollupRow;
  });
}

/** Subtracts the events of these sessions from the rollups over `span` (before they are deleted). */
export async function subtractSessionsFromRollups(trx: Transaction<ObserveSchema>, sessionIds: readonly string[], span: Span): Promise<void> {
  if (sessionIds.length === 0) return;
  const { rows } = await rollupsOfEvents(sql`session_id in (${sql.join(sessionIds)})`, span).execute(trx);
  await applyRollupDeltas(trx, normalised(rows as Record<string, unknown>[]), -1, span);
}

/** The stored rollups over `span` and the rollups recomputed from the events, both in key order: equal when exact. */
export async function compareRollups(db: Kysely<ObserveSchema>, span: Span = HOURLY): Promise<{ stored: RollupRow[]; recomputed: RollupRow[] }> {
  const stored = await db
    .selectFrom(span.rollups)
    .selectAll()
    .orderBy(ROLLUP_KEY.map((k) => sql.ref(k)) as never)
    .execute();
  const { rows } = await rollupsOfEvents(sql`true`, span).execute(db);
  return { stored: normalised(stored as Record<string, unknown>[]), recomputed: normalised(rows as Record<string, unknown>[]) };
}

export type RollupSource = Pick<
  EventRow,
  | 'ts'
  | 'agent_id'
  | 'event_type'
  | 'tool_name'
  | 'provider'
  | 'model'
  | 'is_error'
  | 'cost_usd'
  | 'duration_ms'
  | 'latency_ms'
  | 'input_tokens'
  | 'output_tokens'
  | 'complexity_tier'
  | 'finish_reason'
>;

/** A rollup row's key as one string: equal for rows of the same (hour, agent, event type, tool, provider, model, tier). */
export function rollupKey(row: Pick<RollupRow, (typeof ROLLUP_KEY)[number]>): string {
  return keyOf(row.hour, row.agent_id, row.event_type, row.tool_name, row.provider, row.model, row.tier);
}

/** Length-prefixed parts: as unambiguous as JSON of the list, without building the list (built once a row of a batch, for its lock order). */
function keyOf(hour: number, ...parts: string[]): string {
  let key = String(hour);
  for (const part of parts) key += `|${part.length}:${part}`;
  return key;
}

/**
 * Rollup rows summed event by event: the one definition of what an event adds to its rollup over
 * `span`, used by ingest (its deltas) and by the audit's recomputation from chained events.
 */
export class RollupSums {
  private readonly found = new TupleIndex<RollupRow>();
  private readonly created: RollupRow[] = [];

  constructor(private readonly span: Span) {}

  add(e: RollupSource): void {
    const hour = spanStart(e.ts, this.span);
    const tool = e.tool_name ?? '';
    const provider = e.provider ?? '';
    const model = e.model ?? '';
    const tier = e.complexity_tier ?? '';
    const parts = [hour, e.agent_id, e.event_type, tool, provider, model, tier];
    let row = this.found.get(parts);
    if (!row) {
      row = {
        hour,
        agent_id: e.agent_id,
        event_type: e.event_type,
        tool_name: tool,
        provider,
        model,
        tier,
        event_count: 0,
        error_count: 0,
        cost_usd: 0,
        duration_sum: 0,
        duration_count: 0,
        latency_sum: 0,
        latency_count: 0,
        input_tokens: 0,
        output_tokens: 0,
        failure_count: 0,
      };
      this.found.set(parts, row);
      this.created.push(row);
    }
    row.event_count += 1;
    row.error_count += e.is_error;
    if (e.cost_usd !== null) row.cost_usd = addUsd(row.cost_usd, e.cost_usd);
    if (e.duration_ms !== null) {
      row.duration_sum += e.duration_ms;
      row.duration_count += 1;
    }
    if (e.latency_ms !== null) {
      row.latency_sum += e.latency_ms;
      row.latency_count += 1;
    }
    row.input_tokens += e.input_tokens ?? 0;
    row.output_tokens += e.output_tokens ?? 0;
    if (e.finish_reason === 'error') row.failure_count += 1;
  }

  /** One row per key, in key order (a fixed lock order). */
  rows(): RollupRow[] {
    return this.created
      .map((row): [string, RollupRow] => [rollupKey(row), row])
      .sort(([a], [b]) => compareCodeUnits(a, b))
      .map(([, row]) => row);
  }
}

/** The rollup rows over `span` a set of events adds, one per key, in key order (a fixed lock order). */
export function rollupDeltas(events: readonly RollupSource[], span: Span): RollupRow[] {
  const sums = new RollupSums(span);
  for (const e of events) sums.add(e);
  return sums.rows();
}

const ROWS_PER_STATEMENT = 500;

/** Adds (`sign` 1) or subtracts (`sign` -1) deltas to the rollups over `span`, in the caller's transaction. */
export async function applyRollupDeltas(trx: Transaction<ObserveSchema>, deltas: readonly RollupRow[], sign: 1 | -1, span: Span): Promise<void> {
  const table = span.rollups;
  for (let offset = 0; offset < deltas.length; offset += ROWS_PER_STATEMENT) {
    const chunk = deltas.slice(offset, offset + ROWS_PER_STATEMENT).map((row) => {
      if (sign === 1) return row;
      const negated: RollupRow = { ...row };
      for (const column of ROLLUP_SUMS) negated[column] = -row[column];
      return negated;
    });
    await trx
      .insertInto(table)
      .values(chunk)
      .onConflict((oc) =>
        oc.columns([...ROLLUP_KEY]).doUpdateSet(
          Object.fromEntries(
            ROLLUP_SUMS.map((c) => {
              const [stored, added] = [sql.ref(`${table}.${c}`), sql.ref(`excluded.${c}`)];
              return [c, c === 'cost_usd' ? addUsdSql(stored, added) : sql`${stored} + ${added}`];
            }),
          ),
        ),
      )
      .execute();
  }
  if (sign === -1 && deltas.length > 0) {
    const hours = [...new Set(deltas.map((d) => d.hour))];
    await trx.deleteFrom(table).where('hour', 'in', hours).where('event_count', '<=', 0).execute();
  }
}
