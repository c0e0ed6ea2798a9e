import { toIso } from '@vigil/platform';
import { roundUsd } from '@vigil/pricing';
import type { ObserveDatabase } from '../schema.ts';
import { SYSTEM_AGENT_ID, type SessionRow } from '../events/index.ts';
import { sessionDurationMs } from './figures.ts';
import type { ListSessionsQuery, Session, SessionStep } from './schemas.ts';
import type { SessionStatus } from '../events/index.ts';

export function toSession(row: SessionRow): Session {
  const session: Session = {
    id: row.id,
    agentId: row.agent_id,
    agentName: row.agent_name,
    status: row.status as SessionStatus,
    startedAt: toIso(row.started_at),
    lastEventAt: toIso(row.last_event_at),
    durationMs: sessionDurationMs(row),
    eventCount: row.event_count,
    toolCallCount: row.tool_call_count,
    errorCount: row.error_count,
    totalCostUsd: roundUsd(Number(row.total_cost_usd)),
    tags: JSON.parse(row.tags) as string[],
  };
  if (row.ended_at !== null) session.endedAt = toIso(row.ended_at);
  return session;
}

export async function findSession(database: ObserveDatabase, id: string): Promise<SessionRow | undefined> {
  return database.db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findSessions(database: ObserveDatabase, ids: readonly string[]): Promise<SessionRow[]> {
  if (ids.length === 0) return [];
  return database.db.selectFrom('sessions').selectAll().where('id', 'in', ids).execute();
}

/**
 * Sessions newest first; `tags` keeps sessions that carry every listed tag. Without `agentId` the
 * system agent's alert bookkeeping sessions are left out, as from every other list of the user's work.
 */
export async function listSessions(database: ObserveDatabase, query: ListSessionsQuery): Promise<{ rows: SessionRow[]; total: number }> {
  let filtered = database.db.selectFrom('sessions');
  filtered = filtered.where('agent_id', query.agentId === undefined ? '<>' : '=', query.agentId ?? SYSTEM_AGENT_ID);
  if (query.status !== undefined) filtered = filtered.where('status', 'in', query.status);
  if (query.from !== undefined) filtered = filtered.where('started_at', '>=', query.from);
  if (query.to !== undefined) filtered = filtered.where('started_at', '<=', query.to);
  if (query.tags !== undefined) {
    const tags = query.tags;
    filtered = filtered.where('id', 'in', (eb) =>
      eb
        .selectFrom('session_tags')
        .select('session_id')
        .where('tag', 'in', tags)
        .groupBy('session_id')
        .having((h) => h.fn.countAll(), '=', tags.length),
    );
  }
  const [rows, count] = await Promise.all([
    filtered.selectAll().orderBy('started_at', 'desc').orderBy('id', 'desc').limit(query.limit).offset(query.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

/**
 * A page of a session's events as steps (the columns ingest derives, no payload): after `after`
 * by `seq`, at most `limit`. Reads no payload, so no sealed content is opened and no chain is hashed.
 */
export async function sessionSteps(database: ObserveDatabase, sessionId: string, after: number, limit: number): Promise<SessionStep[]> {
  const rows = await database.db
    .selectFrom('events')
    .select([
      'id',
      'seq',
      'ts',
      'event_type',
      'severity',
      'tool_name',
      'model',
      'cost_usd',
      'latency_ms',
      'duration_ms',
      'input_tokens',
      'output_tokens',
      'is_error',
    ])
    .where('session_id', '=', sessionId)
    .where('seq', '>', after)
    .orderBy('seq')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    id: row.id,
    seq: row.seq,
    timestamp: toIso(row.ts),
    eventType: row.event_type,
    severity: row.severity,
    toolName: row.tool_name,
    model: row.model,
    costUsd: row.cost_usd === null ? null : Number(row.cost_usd),
    latencyMs: row.latency_ms ?? row.duration_ms,
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    isError: Number(row.is_error) === 1,
  }));
}
