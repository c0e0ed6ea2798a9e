/**
 * Test kit: error_patterns and tool_sequences recomputed straight from the definitions, over every
 * stored event read in one plain query, with none of the service's passes, indexes or states.
 */
import type { ObserveDatabase } from '../schema.ts';
import { normaliseErrorMessage } from './normalise.ts';

export interface ReferenceQuery {
  analysis: 'error_patterns' | 'tool_sequences';
  from: number;
  to: number;
  agentId?: string;
  limit: number;
}

interface Row {
  session_id: string;
  seq: number;
  ts: number;
  agent_id: string;
  event_type: string;
  severity: string;
  payload: string;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/** The error text of the documented precedence (service.ts), or undefined. */
function errorMessage(row: Row): string | undefined {
  const p = JSON.parse(row.payload) as Record<string, any>;
  const error = p.error as Record<string, unknown> | undefined;
  const data = p.data as Record<string, unknown> | undefined;
  const found =
    row.event_type === 'tool_error'
      ? (text(p.error) ?? text(error?.message) ?? text(p.message) ?? text(p.reason))
      : (text(p.message) ?? text(p.error) ?? text(error?.message) ?? text(p.reason) ?? text(data?.message) ?? text(data?.error));
  return found?.slice(0, 2000);
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export async function recomputeReflection(database: ObserveDatabase, query: ReferenceQuery): Promise<unknown[]> {
  const all = (await database.db
    .selectFrom('events')
    .select(['session_id', 'seq', 'ts', 'agent_id', 'event_type', 'severity', 'payload'])
    .orderBy('session_id')
    .orderBy('seq')
    .execute()) as Row[];
  const rows = all
    .map((r) => ({ ...r, seq: Number(r.seq), ts: Number(r.ts) }))
    .filter((r) => r.ts >= query.from && r.ts <= query.to && (query.agentId === undefined || r.agent_id === query.agentId));
  const sessions = new Map<string, Row[]>();
  for (const row of rows) sessions.set(row.session_id, [...(sessions.get(row.session_id) ?? []), row]);
  const tool = (row: Row) => String((JSON.parse(row.payload) as { toolName?: unknown }).toolName ?? '');
  const callId = (row: Row) => (JSON.parse(row.payload) as { callId?: string }).callId;

  if (query.analysis === 'tool_sequences') {
    const counts = new Map<string, { tools: string[]; frequency: number; sessions: Set<string>; failed: number }>();
    for (const [session, events] of sessions) {
      const calls = events.filter((e) => e.event_type === 'tool_call');
      const failed = (call: Row) =>
        events.some((e) => e.event_type === 'tool_error' && callId(e) !== undefined && callId(e) === callId(call) && e.seq > call.seq);
      for (const n of [2, 3])
        for (let i = 0; i + n <= calls.length; i++) {
          const run = calls.slice(i, i + n);
          const tools = run.map(tool);
          const key = tools.join('\u0000');
          const entry = counts.get(key) ?? { tools, frequency: 0, sessions: new Set<string>(), failed: 0 };
          entry.frequency += 1;
          entry.sessions.add(session);
          if (run.some(failed)) entry.failed += 1;
          counts.set(key, entry);
        }
    }
    return [...counts.entries()]
      .sort(([ka, a], [kb, b]) => b.frequency - a.frequency || b.sessions.size - a.sessions.size || b.tools.length - a.tools.length || compare(ka, kb))
      .slice(0, query.limit)
      .map(([, c]) => ({ tools: c.tools, frequency: c.frequency, sessions: c.sessions.size, errorRate: c.failed / c.frequency }));
  }

  const groups = new Map<string, { count: number; first: number; last: number; sessions: Map<string, number>; preceding: Map<string, number> }>();
  for (const [session, events] of sessions)
    for (const [i, e] of events.entries()) {
      if (!(e.severity === 'error' || e.severity === 'critical' || e.event_type === 'tool_error')) continue;
      const message = errorMessage(e);
      const pattern = message === undefined ? `${e.event_type} (no message)` : normaliseErrorMessage(message);
      const g = groups.get(pattern) ?? { count: 0, first: Infinity, last: -Infinity, sessions: new Map(), preceding: new Map() };
      g.count += 1;
      g.first = Math.min(g.first, e.ts);
      g.last = Math.max(g.last, e.ts);
      g.sessions.set(session, Math.max(g.sessions.get(session) ?? -Infinity, e.ts));
      const before = events
        .slice(0, i)
        .filter((c) => c.event_type === 'tool_call')
        .slice(-3)
        .map(tool);
      if (before.length > 0) g.preceding.set(before.join('\u0000'), (g.preceding.get(before.join('\u0000')) ?? 0) + 1);
      groups.set(pattern, g);
    }
  return [...groups.entries()]
    .sort(([pa, a], [pb, b]) => b.count - a.count || b.last - a.last || compare(pa, pb))
    .slice(0, query.limit)
    .map(([pattern, g]) => ({
      pattern,
      count: g.count,
      firstSeen: new Date(g.first).toISOString(),
      lastSeen: new Date(g.last).toISOString(),
      affectedSessions: [...g.sessions.entries()]
        .sort((a, b) => b[1] - a[1] || compare(a[0], b[0]))
        .slice(0, 20)
        .map(([id]) => id),
      precedingTools: [...g.preceding.entries()]
        .sort((a, b) => b[1] - a[1] || compare(a[0], b[0]))
        .slice(0, 5)
        .map(([key]) => key.split('\u0000')),
    }));
}

export type Payload = Record<string, unknown>;
/** An event as POST /api/events takes it, and the tool events the reflect tests are made of. */
export const ev = (sessionId: string, agentId: string, timestamp: string, eventType: string, payload: Payload, severity?: string) => ({
  sessionId,
  agentId,
  timestamp,
  eventType,
  payload,
  ...(severity ? { severity } : {}),
});
export const call = (s: string, a: string, t: string, toolName: string, callId: string) => ev(s, a, t, 'tool_call', { toolName, callId, arguments: {} });
export const toolError = (s: string, a: string, t: string, toolName: string, callId: string, error: unknown) =>
  ev(s, a, t, 'tool_error', { toolName, callId, error, durationMs: 10 });
