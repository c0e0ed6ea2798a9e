import { addUsd } from '@vigil/pricing';
import type { SessionRow } from './tables.ts';

export const SESSION_STATUSES = ['active', 'completed', 'error'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

/** What a session's counters need from one event. */
export interface SessionEventFacts {
  eventType: string;
  ts: number;
  isError: boolean;
  costUsd: number | null;
  payload: Record<string, unknown>;
}

export function newSessionRow(id: string, agentId: string, ts: number): SessionRow {
  return {
    id,
    agent_id: agentId,
    agent_name: agentId,
    status: 'active',
    started_at: ts,
    session_start: ts,
    ended_at: null,
    last_event_at: ts,
    idle_at: null,
    event_count: 0,
    tool_call_count: 0,
    error_count: 0,
    total_cost_usd: 0,
    tags: '[]',
    last_seq: -1,
    last_hash: null,
  };
}

/**
 * Applies one event to a session row in place (status transitions and counters). An event that
 * comes more than `idleTimeoutMs` after the last one of a session that had not ended marks where
 * the session went idle (once): its figures end there (sessions/figures.ts), whatever comes later.
 */
export function applyEventToSession(session: SessionRow, event: SessionEventFacts, idleTimeoutMs: number): void {
  if (session.idle_at === null && session.status === 'active' && event.ts - session.last_event_at > idleTimeoutMs) {
    session.idle_at = session.last_event_at;
  }
  session.event_count += 1;
  if (event.eventType === 'tool_call') session.tool_call_count += 1;
  if (event.isError) session.error_count += 1;
  if (event.costUsd !== null) session.total_cost_usd = addUsd(session.total_cost_usd, event.costUsd);
  if (event.ts < session.started_at) session.started_at = event.ts;
  if (event.ts > session.last_event_at) session.last_event_at = event.ts;
  if (event.eventType === 'session_started') {
    const { agentName, tags } = event.payload;
    if (typeof agentName === 'string' && agentName.length > 0) session.agent_name = agentName;
    if (Array.isArray(tags)) session.tags = JSON.stringify([...new Set(tags as string[])]);
    session.status = 'active';
    session.ended_at = null;
  } else if (event.eventType === 'session_ended') {
    session.status = event.payload.reason === 'error' ? 'error' : 'completed';
    session.ended_at = event.ts;
  }
}
