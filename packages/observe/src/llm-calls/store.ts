import { toIso } from '@vigil/platform';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { EventRow } from '../events/index.ts';
import type { ObserveSchema } from '../schema.ts';
import { encodeCursor, type ListLlmCallsQuery, type LlmCall, type LlmCallSort } from './schemas.ts';

/**
 * The partial indexes' predicate: llm_response events are the only ones ingest derives a complexity
 * tier for (events/derive.ts; migration 0003 filled the older rows). Not `event_type = …`: without
 * statistics SQLite would take events_type_ts for that and sort every call.
 */
const IS_LLM_CALL = sql<boolean>`complexity_tier is not null`;

/** The sort keys, written as the indexes of migration 0041 are (llm-calls/migrations.ts). */
const SORT_KEYS: Record<LlmCallSort, RawBuilder<number>> = {
  time: sql<number>`ts`,
  cost: sql<number>`coalesce(cost_usd, 0)`,
  latency: sql<number>`coalesce(latency_ms, 0)`,
  tokens: sql<number>`coalesce(input_tokens, 0) + coalesce(output_tokens, 0)`,
};

const LIST_COLUMNS = [
  'id',
  'ts',
  'session_id',
  'agent_id',
  'provider',
  'model',
  'is_error',
  'finish_reason',
  'input_tokens',
  'output_tokens',
  'cost_usd',
  'latency_ms',
] as const;
export type LlmCallRow = Pick<EventRow, (typeof LIST_COLUMNS)[number]>;

// PostgreSQL answers bigint as text.
const num = (value: number | null): number | null => (value === null ? null : Number(value));

export function toLlmCall(row: LlmCallRow): LlmCall {
  const inputTokens = num(row.input_tokens);
  const outputTokens = num(row.output_tokens);
  return {
    id: row.id,
    timestamp: toIso(Number(row.ts)),
    sessionId: row.session_id,
    agentId: row.agent_id,
    provider: row.provider,
    model: row.model,
    status: Number(row.is_error) === 1 ? 'error' : 'success',
    finishReason: row.finish_reason,
    inputTokens,
    outputTokens,
    totalTokens: (inputTokens ?? 0) + (outputTokens ?? 0),
    costUsd: num(row.cost_usd),
    latencyMs: num(row.latency_ms),
  };
}

const sortValue = (call: LlmCall, sort: LlmCallSort): number =>
  sort === 'time' ? Date.parse(call.timestamp) : sort === 'cost' ? (call.costUsd ?? 0) : sort === 'latency' ? (call.latencyMs ?? 0) : call.totalTokens;

/** The query of one page (limit + 1 rows, to tell whether another follows): one range of an index of migration 0041. */
export function llmCallsQuery(db: Kysely<ObserveSchema>, query: ListLlmCallsQuery) {
  const key = SORT_KEYS[query.sort];
  const direction = query.order === 'asc' ? sql`asc` : sql`desc`;
  let select = db
    .selectFrom('events')
    .select(LIST_COLUMNS)
    .where(IS_LLM_CALL)
    .orderBy(sql`${key} ${direction}`)
    .orderBy(sql`id ${direction}`)
    .limit(query.limit + 1);
  if (query.model !== undefined) select = select.where('model', '=', query.model);
  if (query.agentId !== undefined) select = select.where('agent_id', '=', query.agentId);
  if (query.sessionId !== undefined) select = select.where('session_id', '=', query.sessionId);
  if (query.status !== undefined) select = select.where('is_error', '=', query.status === 'error' ? 1 : 0);
  if (query.cursor !== undefined) {
    const after = query.order === 'asc' ? sql`>` : sql`<`;
    select = select.where(sql<boolean>`(${key}, id) ${after} (${query.cursor.value}, ${query.cursor.id})`);
  }
  return select;
}

/** One page of llm_response events, in (sort key, id) order after the cursor. */
export async function listLlmCalls(db: Kysely<ObserveSchema>, query: ListLlmCallsQuery): Promise<{ calls: LlmCall[]; nextCursor: string | null }> {
  const rows = await llmCallsQuery(db, query).execute();
  const calls = rows.slice(0, query.limit).map(toLlmCall);
  const last = calls.at(-1);
  return {
    calls,
    nextCursor: rows.length > query.limit && last ? encodeCursor({ sort: query.sort, value: sortValue(last, query.sort), id: last.id }) : null,
  };
}

/** An llm_response event with its stored (maybe sealed) payload. */
export function findLlmCall(db: Kysely<ObserveSchema>, id: string): Promise<(LlmCallRow & Pick<EventRow, 'payload' | 'metadata' | 'call_id'>) | undefined> {
  return db
    .selectFrom('events')
    .select([...LIST_COLUMNS, 'payload', 'metadata', 'call_id'])
    .where('id', '=', id)
    .where(IS_LLM_CALL)
    .executeTakeFirst();
}

/** The llm_call event that asked for a response: same session and callId, the latest before it. */
export function findLlmRequest(
  db: Kysely<ObserveSchema>,
  response: { session_id: string; call_id: string; ts: number },
): Promise<Pick<EventRow, 'id' | 'payload' | 'metadata'> | undefined> {
  return db
    .selectFrom('events')
    .select(['id', 'payload', 'metadata'])
    .where('session_id', '=', response.session_id)
    .where('event_type', '=', 'llm_call')
    .where('call_id', '=', response.call_id)
    .where('ts', '<=', response.ts)
    .orderBy('ts', 'desc')
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst();
}
