// For tests: the agents report's figures as GET /api/analytics/agents answers them, and the same
// figures computed straight from the events and sessions of a range, in one shape to compare.
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import type { ObserveSchema } from '../schema.ts';
import { binOf, percentilesOfBins } from './latency.ts';

/** p50/p95/p99 fields (with this name) as the sketch reports them for these timed values, or null for none. */
export function percentileFieldsOf(name: string, values: readonly number[]): Record<string, number | null> {
  const percentiles = percentilesOfBins(values.map((ms) => [binOf(ms), 1] as const));
  return Object.fromEntries((['p50', 'p95', 'p99'] as const).map((p) => [`${p}${name}Ms`, percentiles?.[p] ?? null]));
}

/** What the report is asked through: a test instance's authenticated request (testing.ts TestObserve). */
interface ReportCaller {
  call(options: { method: 'GET'; url: string }): Promise<{ statusCode: number; body: string; json(): unknown }>;
}

/** The report over [from, to] (epoch ms): per agent, in agent order, its counts, spend and percentiles. */
export async function reportedAgents(observe: ReportCaller, from: number, to: number): Promise<Record<string, unknown>[]> {
  const url = `/api/analytics/agents?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;
  const response = await observe.call({ method: 'GET', url });
  assert.equal(response.statusCode, 200, response.body);
  return (response.json() as { agents: Record<string, unknown>[] }).agents
    .map(({ agentId, sessionCount, totalEvents, totalErrors, totalCostUsd, ...rest }) => ({
      agentId,
      sessionCount,
      totalEvents,
      totalErrors,
      totalCostUsd,
      ...Object.fromEntries(Object.entries(rest).filter(([name]) => /^p\d\d(ToolDuration|LlmLatency)Ms$/.test(name))),
    }))
    .sort((a, b) => String(a.agentId).localeCompare(String(b.agentId)));
}

/** The same figures from the events and the sessions started in [from, to]. */
export async function recomputedAgents(db: Kysely<ObserveSchema>, from: number, to: number): Promise<Record<string, unknown>[]> {
  const rows = await db
    .selectFrom('events')
    .select(['agent_id', 'is_error', 'cost_usd', 'duration_ms', 'latency_ms'])
    .where('ts', '>=', from)
    .where('ts', '<=', to)
    .execute();
  const sessions = await db.selectFrom('sessions').select('agent_id').where('started_at', '>=', from).where('started_at', '<=', to).execute();
  const agents = [...new Set([...rows.map((r) => r.agent_id), ...sessions.map((r) => r.agent_id)])].sort();
  return agents.map((agentId) => {
    const own = rows.filter((r) => r.agent_id === agentId);
    const timed = (column: 'duration_ms' | 'latency_ms') => own.flatMap((r) => (r[column] === null ? [] : [Number(r[column])]));
    return {
      agentId,
      sessionCount: sessions.filter((r) => r.agent_id === agentId).length,
      totalEvents: own.length,
      totalErrors: own.filter((r) => Number(r.is_error) === 1).length,
      totalCostUsd: Math.round(own.reduce((sum, r) => sum + Number(r.cost_usd ?? 0), 0) * 1e9) / 1e9,
      ...percentileFieldsOf('ToolDuration', timed('duration_ms')),
      ...percentileFieldsOf('LlmLatency', timed('latency_ms')),
    };
  });
}
