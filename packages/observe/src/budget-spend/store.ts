import { utcWindowStart } from '@vigil/platform';
import { usdOf } from '@vigil/pricing';
import { sql } from 'kysely';
import { aggregate } from '../analytics/index.ts';
import { SYSTEM_AGENT_ID, sumNanosSql } from '../events/index.ts';
import type { ObserveDatabase } from '../schema.ts';

/** The events that spend (the same as GET /api/analytics/costs counts). */
const COST_EVENT_TYPES = ['llm_response', 'cost_tracked'];

export const SPEND_SCOPES = ['agent', 'session', 'tag', 'tenant'] as const;
export const SPEND_WINDOWS = ['session', 'hour', 'day', 'month'] as const;
export type SpendScope = (typeof SPEND_SCOPES)[number];
export type SpendWindow = (typeof SPEND_WINDOWS)[number];

/** The start of the UTC window holding `now` (0 for `session`: a session's whole life). */
export function windowStart(window: SpendWindow, now: number): number {
  return window === 'session' ? 0 : utcWindowStart(window, now);
}

export interface SpendQuery {
  id: string;
  scope: SpendScope;
  /** The agent, session or tag; absent: each one (agent, session), or the whole tenant. */
  value?: string;
  window: SpendWindow;
  /** Per-session figures (window `session`) below this are left out. */
  minUsd: number;
}

/** One figure: what `key` (the agent, session, tag or `*` for the tenant) spent in the window, and the agents that spent it. */
export interface SpendFigure {
  key: string;
  spendUsd: number;
  agentIds: string[];
}

/** Most sessions answered per query (the highest spenders first). */
const MAX_SESSIONS = 1000;

/**
 * The spend figures of one query at `now`: the same sums as GET /api/analytics/costs for agents and
 * the tenant (rollups and events, exact in nano-dollars), event sums for tags and sessions.
 */
export async function spendFigures(database: ObserveDatabase, query: SpendQuery, now: number): Promise<SpendFigure[]> {
  const from = windowStart(query.window, now);
  const { db } = database;
  if (query.window === 'session' || query.scope === 'session') {
    // Per session: each session in scope, its spend in the window.
    let q = db
      .selectFrom('events as e')
      .innerJoin('sessions as s', 's.id', 'e.session_id')
      .select(['e.session_id as key', 's.agent_id as agent_id'])
      .select(sumNanosSql('e.cost_usd').as('nanos'))
      .where('e.event_type', 'in', COST_EVENT_TYPES)
      .where('e.ts', '>=', from)
      .where('e.ts', '<=', now)
      .where('s.agent_id', '!=', SYSTEM_AGENT_ID);
    if (query.scope === 'session' && query.value !== undefined) q = q.where('e.session_id', '=', query.value);
    if (query.scope === 'agent' && query.value !== undefined) q = q.where('s.agent_id', '=', query.value);
    if (query.scope === 'tag') {
      const tag = query.value ?? '';
      q = q.where((eb) =>
        eb.exists(eb.selectFrom('session_tags as t').select(sql.lit(1).as('one')).whereRef('t.session_id', '=', 'e.session_id').where('t.tag', '=', tag)),
      );
    }
    if (query.window === 'session') q = q.where('s.total_cost_usd', '>=', query.minUsd);
    const rows = await q.groupBy(['e.session_id', 's.agent_id']).orderBy('nanos', 'desc').limit(MAX_SESSIONS).execute();
    return rows.map((row) => ({ key: row.key, spendUsd: usdOf(Number(row.nanos)), agentIds: [row.agent_id] }));
  }
  if (query.scope === 'tag') {
    const rows = await db
      .selectFrom('events as e')
      .innerJoin('session_tags as t', 't.session_id', 'e.session_id')
      .select('e.agent_id')
      .select(sumNanosSql('e.cost_usd').as('nanos'))
      .where('t.tag', '=', query.value ?? '')
      .where('e.event_type', 'in', COST_EVENT_TYPES)
      .where('e.ts', '>=', from)
      .where('e.ts', '<=', now)
      .groupBy('e.agent_id')
      .execute();
    const nanos = rows.reduce((sum, row) => sum + Number(row.nanos), 0);
    return [{ key: query.value ?? '', spendUsd: usdOf(nanos), agentIds: rows.filter((r) => Number(r.nanos) > 0).map((r) => r.agent_id) }];
  }
  // Agents and the tenant: analytics' own sums, by agent.
  const byAgent = await aggregate(database, {
    from,
    to: now,
    dimensions: ['agent_id'],
    eventTypes: COST_EVENT_TYPES,
    ...(query.scope === 'agent' && query.value !== undefined ? { agentId: query.value } : { excludeAgentId: SYSTEM_AGENT_ID }),
    sums: ['costNanos'],
  });
  const spent = byAgent.filter((row) => row.costNanos > 0);
  if (query.scope === 'tenant') {
    return [{ key: '*', spendUsd: usdOf(spent.reduce((sum, row) => sum + row.costNanos, 0)), agentIds: spent.map((row) => String(row.agent_id)) }];
  }
  if (query.value !== undefined) {
    return [{ key: query.value, spendUsd: usdOf(spent.reduce((sum, row) => sum + row.costNanos, 0)), agentIds: [query.value] }];
  }
  return spent.map((row) => ({ key: String(row.agent_id), spendUsd: usdOf(row.costNanos), agentIds: [String(row.agent_id)] }));
}
