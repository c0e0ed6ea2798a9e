import { forUpdate, newId, sumAsDouble, type DialectName } from '@vigil/platform';
import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { BenchmarkRow, BenchmarkVariantRow } from './tables.ts';
import { sessionDurationSql } from '../sessions/index.ts';
import type { BenchmarkStatus, CreateBenchmarkBody, ListBenchmarksQuery } from './schemas.ts';
import { BENCHMARK_METRICS, type BenchmarkMetric } from './statistics.ts';

type Executor = Kysely<ObserveSchema>;

export interface Variant {
  id: string;
  position: number;
  name: string;
  tag: string;
  description: string | null;
  agentId: string | null;
}

/** A stored benchmark, decoded. Times are epoch milliseconds. */
export interface Benchmark {
  id: string;
  name: string;
  description: string | null;
  agentId: string | null;
  status: BenchmarkStatus;
  metrics: BenchmarkMetric[];
  minSessionsPerVariant: number;
  timeFrom: number | null;
  timeTo: number | null;
  /** JSON of the results cached at completion; null before. */
  cachedResults: string | null;
  createdAt: number;
  updatedAt: number;
  variants: Variant[];
}

function decodeVariant(row: BenchmarkVariantRow): Variant {
  return { id: row.id, position: row.position, name: row.name, tag: row.tag, description: row.description, agentId: row.agent_id };
}

function decode(row: BenchmarkRow, variants: readonly BenchmarkVariantRow[]): Benchmark {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    agentId: row.agent_id,
    status: row.status as BenchmarkStatus,
    metrics: JSON.parse(row.metrics) as BenchmarkMetric[],
    minSessionsPerVariant: Number(row.min_sessions_per_variant),
    timeFrom: row.time_from,
    timeTo: row.time_to,
    cachedResults: row.results,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    variants: [...variants].sort((a, b) => a.position - b.position).map(decodeVariant),
  };
}

/** Stores a new draft benchmark with its variants (one transaction). */
export async function insertBenchmark(database: ObserveDatabase, body: CreateBenchmarkBody, now: number): Promise<Benchmark> {
  const row: BenchmarkRow = {
    id: newId(),
    name: body.name,
    description: body.description ?? null,
    agent_id: body.agentId ?? null,
    status: 'draft',
    metrics: JSON.stringify(body.metrics ?? [...BENCHMARK_METRICS]),
    min_sessions_per_variant: body.minSessionsPerVariant,
    time_from: body.timeRange?.from ?? null,
    time_to: body.timeRange?.to ?? null,
    results: null,
    created_at: now,
    updated_at: now,
  };
  const variants: BenchmarkVariantRow[] = body.variants.map((variant, position) => ({
    id: newId(),
    benchmark_id: row.id,
    position,
    name: variant.name,
    tag: variant.tag,
    description: variant.description ?? null,
    agent_id: variant.agentId ?? null,
  }));
  await database.db.transaction().execute(async (trx) => {
    await trx.insertInto('benchmarks').values(row).execute();
    await trx.insertInto('benchmark_variants').values(variants).execute();
  });
  return decode(row, variants);
}

async function variantsOf(executor: Executor, benchmarkIds: readonly string[]): Promise<Map<string, BenchmarkVariantRow[]>> {
  const out = new Map<string, BenchmarkVariantRow[]>();
  if (benchmarkIds.length === 0) return out;
  const rows = await executor
    .selectFrom('benchmark_variants')
    .selectAll()
    .where('benchmark_id', 'in', benchmarkIds)
    .orderBy('benchmark_id')
    .orderBy('position')
    .execute();
  for (const row of rows) {
    const list = out.get(row.benchmark_id) ?? [];
    list.push(row);
    out.set(row.benchmark_id, list);
  }
  return out;
}

export async function findBenchmark(executor: Executor, id: string): Promise<Benchmark | undefined> {
  const row = await executor.selectFrom('benchmarks').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) return undefined;
  return decode(row, (await variantsOf(executor, [id])).get(id) ?? []);
}

/** The benchmark, row-locked for the rest of the transaction (PostgreSQL; SQLite holds the write lock). */
export async function lockBenchmark(trx: Transaction<ObserveSchema>, dialect: DialectName, id: string): Promise<Benchmark | undefined> {
  const row = await forUpdate(trx.selectFrom('benchmarks').selectAll().where('id', '=', id), dialect).executeTakeFirst();
  if (!row) return undefined;
  return decode(row, (await variantsOf(trx, [id])).get(id) ?? []);
}

/**
 * Newest first (created_at, then id, both descending; ids are time-ordered). `agentId` keeps
 * benchmarks scoped to that agent or with a variant overriding to it; `total` counts every match.
 */
export async function listBenchmarks(database: ObserveDatabase, query: ListBenchmarksQuery): Promise<{ rows: Benchmark[]; total: number }> {
  const db = database.db;
  let filtered = db.selectFrom('benchmarks');
  if (query.status !== undefined) filtered = filtered.where('status', '=', query.status);
  const agentId = query.agentId;
  if (agentId !== undefined) {
    filtered = filtered.where((eb) =>
      eb.or([eb('agent_id', '=', agentId), eb('id', 'in', eb.selectFrom('benchmark_variants').select('benchmark_id').where('agent_id', '=', agentId))]),
    );
  }
  const [rows, count] = await Promise.all([
    filtered.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit).offset(query.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  const variants = await variantsOf(
    db,
    rows.map((r) => r.id),
  );
  return { rows: rows.map((row) => decode(row, variants.get(row.id) ?? [])), total: Number(count.n) };
}

/** Changes the status; `results` (JSON) is written when given, else left as is. */
export async function updateStatus(trx: Transaction<ObserveSchema>, id: string, status: BenchmarkStatus, now: number, results?: string): Promise<void> {
  await trx
    .updateTable('benchmarks')
    .set(results === undefined ? { status, updated_at: now } : { status, updated_at: now, results })
    .where('id', '=', id)
    .execute();
}

export async function deleteBenchmark(trx: Transaction<ObserveSchema>, id: string): Promise<void> {
  await trx.deleteFrom('benchmark_variants').where('benchmark_id', '=', id).execute();
  await trx.deleteFrom('benchmarks').where('id', '=', id).execute();
}

// ---- the sessions of a variant ----

/**
 * FROM clause joining each variant of the benchmark `v` to its sessions `s`: sessions carrying the
 * variant's tag, of the variant's agent (else the benchmark's agent, else any), started within the
 * benchmark's time range (both bounds inclusive). A session carrying the tags of two variants
 * belongs to both.
 */
function variantSessionsFrom(sessionJoin: 'join' | 'left join'): RawBuilder<unknown> {
  const join = sql.raw(sessionJoin);
  return sql`benchmark_variants v
    join benchmarks b on b.id = v.benchmark_id
    ${join} session_tags t on t.tag = v.tag
    ${join} sessions s on s.id = t.session_id
      and (coalesce(v.agent_id, b.agent_id) is null or s.agent_id = coalesce(v.agent_id, b.agent_id))
      and (b.time_from is null or s.started_at >= b.time_from)
      and (b.time_to is null or s.started_at <= b.time_to)`;
}

/** Number of sessions of each variant (by variant id), counted in SQL. */
export async function variantSessionCounts(executor: Executor, benchmarkId: string): Promise<Map<string, number>> {
  const result = await sql<{ variant_id: string; n: unknown }>`
    select v.id as variant_id, count(s.id) as n
    from ${variantSessionsFrom('left join')}
    where v.benchmark_id = ${benchmarkId}
    group by v.id`.execute(executor);
  return new Map(result.rows.map((r) => [r.variant_id, Number(r.n)]));
}

/** What the benchmark metrics need from one session of a variant (aggregated in SQL). */
export interface SessionValues {
  variantId: string;
  sessionId: string;
  /** 1 when the session has an error event (error_count > 0), else 0. */
  errored: number;
  /** 1 when the session's status is `completed`, else 0. */
  completed: number;
  /** The session's spend (llm_response and cost_tracked costUsd). */
  costUsd: number;
  /** Its duration by the idle rule (sessions/figures.ts). */
  durationMs: number;
  /** tool_response and tool_error events. */
  toolSuccesses: number;
  toolFailures: number;
  /** Sum and number of the durationMs of those tool results. */
  latencySum: number;
  latencyCount: number;
  /** Input plus output tokens of llm_response and cost_tracked events. */
  tokens: number;
}

const num = (value: unknown): number => {
  // PostgreSQL answers sums of bigint as numeric text.
  const n = Number(value ?? 0);
  return Number.isFinite(n) ? n : 0;
};
const count = (value: unknown): number => Math.max(0, Math.round(num(value)));

/**
 * One row per (variant, session), ordered by variant position, then session start and id. Event
 * figures are aggregated per session in SQL; only these per-session aggregates reach JavaScript.
 */
export async function variantSessionValues(executor: Executor, benchmarkId: string): Promise<SessionValues[]> {
  const result = await sql<Record<string, unknown>>`
    select v.id as variant_id, s.id as session_id,
      case when s.error_count > 0 then 1 else 0 end as errored,
      case when s.status = 'completed' then 1 else 0 end as completed,
      s.total_cost_usd as cost_usd,
      ${sessionDurationSql('s')} as duration_ms,
      coalesce(e.tool_ok, 0) as tool_ok,
      coalesce(e.tool_failed, 0) as tool_failed,
      coalesce(e.latency_sum, 0) as latency_sum,
      coalesce(e.latency_count, 0) as latency_count,
      coalesce(e.tokens, 0) as tokens
    from ${variantSessionsFrom('join')}
    left join (
      select session_id,
        sum(case when event_type = 'tool_response' then 1 else 0 end) as tool_ok,
        sum(case when event_type = 'tool_error' then 1 else 0 end) as tool_failed,
        sum(case when event_type in ('tool_response', 'tool_error') and duration_ms is not null then duration_ms else 0 end) as latency_sum,
        sum(case when event_type in ('tool_response', 'tool_error') and duration_ms is not null then 1 else 0 end) as latency_count,
        ${sumAsDouble(sql`case when event_type in ('llm_response', 'cost_tracked') then coalesce(input_tokens, 0) + coalesce(output_tokens, 0) else 0 end`)} as tokens
      from events
      where event_type in ('tool_response', 'tool_error', 'llm_response', 'cost_tracked')
        and session_id in (
          select t2.session_id from session_tags t2 join benchmark_variants v2 on v2.tag = t2.tag where v2.benchmark_id = ${benchmarkId}
        )
      group by session_id
    ) e on e.session_id = s.id
    where v.benchmark_id = ${benchmarkId}
    order by v.position, s.started_at, s.id`.execute(executor);
  return result.rows.map((r) => ({
    variantId: String(r.variant_id),
    sessionId: String(r.session_id),
    errored: count(r.errored) > 0 ? 1 : 0,
    completed: count(r.completed) > 0 ? 1 : 0,
    costUsd: num(r.cost_usd),
    durationMs: num(r.duration_ms),
    toolSuccesses: count(r.tool_ok),
    toolFailures: count(r.tool_failed),
    latencySum: num(r.latency_sum),
    latencyCount: count(r.latency_count),
    tokens: num(r.tokens),
  }));
}
