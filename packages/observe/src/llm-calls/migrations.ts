// The llm-calls feature's indexes (part of step 0041, src/migrations.ts). A step imports no other feature's code.
import type { MigrationDb } from '@vigil/platform';
import { sql } from 'kysely';

/**
 * Partial indexes over llm_response events, one per sort and per filter of GET /api/llm-calls, so
 * that each page is one index range. Partial, so the other events' ingest does not pay for them.
 * Their predicate and expressions are the store's (llm-calls/store.ts), written the same so both
 * databases match them. Built from the rows already stored: no backfill is needed.
 */
export async function createLlmCallIndexes(db: MigrationDb): Promise<void> {
  const indexes: Record<string, string> = {
    llm_calls_ts: 'ts, id',
    llm_calls_cost: '(coalesce(cost_usd, 0)), id',
    llm_calls_latency: '(coalesce(latency_ms, 0)), id',
    llm_calls_tokens: '(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)), id',
    llm_calls_model: 'model, ts, id',
    llm_calls_agent: 'agent_id, ts, id',
    llm_calls_session: 'session_id, ts, id',
    llm_calls_status: 'is_error, ts, id',
  };
  for (const [name, columns] of Object.entries(indexes)) {
    await sql`create index ${sql.id(name)} on events (${sql.raw(columns)}) where complexity_tier is not null`.execute(db);
  }
}
