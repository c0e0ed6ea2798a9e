// observe's MCP tools (docs/guide/mcp.md): each one calls one observe route. Served at /mcp, and
// the base of the same tools of `vigil mcp` (stdio), which is why this file needs zod only.
import { mcpRouteTool, queryString } from '@vigil/platform/mcp-tool';
import { z } from 'zod';

const isoTime = z.string().describe('ISO 8601 time, e.g. 2026-01-31T09:00:00Z');
const identifier = z.string().min(1).max(256);
const limit = (max: number) => z.number().int().min(1).max(max).optional();
const path = (segment: string) => encodeURIComponent(segment);

/** observe's MCP tools by name: /mcp serves them all; `vigil mcp` (stdio) builds on them. */
export const OBSERVE_MCP_TOOLS = {
  log_event: mcpRouteTool({
    name: 'log_event',
    description:
      'Record one event in a session: session_started, tool_call, tool_response, tool_error, llm_call, llm_response, custom, session_ended, … The payload fields depend on eventType; the answer names any missing field.',
    input: {
      sessionId: identifier,
      agentId: identifier,
      eventType: z.string().min(1).max(100),
      payload: z.record(z.string(), z.unknown()).describe('e.g. tool_call: {toolName, callId, arguments}; custom: {type, data}'),
      severity: z.enum(['debug', 'info', 'warn', 'error', 'critical']).optional(),
      metadata: z.record(z.string(), z.unknown()).optional(),
      timestamp: isoTime.optional().describe('Default: now'),
    },
    readOnly: false,
    route: 'POST /api/events',
    request: (event) => ({ url: '/api/events', body: { events: [event] } }),
  }),
  query_sessions: mcpRouteTool({
    name: 'query_sessions',
    description: 'List sessions, newest first: filter by agent, status (active, completed, error; comma-separated), tags (all must match) and start time.',
    input: {
      agentId: identifier.optional(),
      status: z.string().optional(),
      tags: z.array(z.string().min(1).max(200)).max(100).optional(),
      from: isoTime.optional(),
      to: isoTime.optional(),
      limit: limit(500),
      offset: z.number().int().min(0).optional(),
    },
    readOnly: true,
    route: 'GET /api/sessions',
    request: ({ tags, ...query }) => ({ url: `/api/sessions${queryString({ ...query, tags: tags?.join(',') })}` }),
  }),
  get_session: mcpRouteTool({
    name: 'get_session',
    description: 'One session: status, counters, cost, tags.',
    input: { sessionId: identifier },
    readOnly: true,
    route: 'GET /api/sessions/:id',
    request: ({ sessionId }) => ({ url: `/api/sessions/${path(sessionId)}` }),
  }),
  get_session_timeline: mcpRouteTool({
    name: 'get_session_timeline',
    description: "A session's events in order, and whether its hash chain verifies.",
    input: { sessionId: identifier },
    readOnly: true,
    route: 'GET /api/sessions/:id/timeline',
    request: ({ sessionId }) => ({ url: `/api/sessions/${path(sessionId)}/timeline` }),
  }),
  query_events: mcpRouteTool({
    name: 'query_events',
    description: 'Search events: by session, agent, types and severities (comma-separated), time range and full-text search over payloads.',
    input: {
      sessionId: identifier.optional(),
      agentId: identifier.optional(),
      eventType: z.string().optional().describe('e.g. tool_error,llm_response'),
      severity: z.string().optional(),
      search: z.string().min(1).max(500).optional(),
      from: isoTime.optional(),
      to: isoTime.optional(),
      order: z.enum(['asc', 'desc']).optional(),
      limit: limit(500),
      offset: z.number().int().min(0).optional(),
    },
    readOnly: true,
    route: 'GET /api/events',
    request: (query) => ({ url: `/api/events${queryString(query)}` }),
  }),
  get_analytics: mcpRouteTool({
    name: 'get_analytics',
    description: 'Events, tool calls, errors, latency and cost per time bucket over a range (default the last 24 h), of one agent with agentId.',
    input: { from: isoTime.optional(), to: isoTime.optional(), granularity: z.enum(['hour', 'day', 'week']).optional(), agentId: identifier.optional() },
    readOnly: true,
    route: 'GET /api/analytics',
    request: (query) => ({ url: `/api/analytics${queryString(query)}` }),
  }),
  recall: mcpRouteTool({
    name: 'recall',
    description: 'Semantic search over recorded events and sessions ("when did the payment tool fail?"), best matches first.',
    input: {
      query: z.string().min(1).max(2000),
      scope: z.enum(['all', 'events', 'sessions']).optional(),
      agentId: identifier.optional(),
      from: isoTime.optional(),
      to: isoTime.optional(),
      limit: limit(100),
      minScore: z.number().min(0).max(1).optional(),
    },
    readOnly: true,
    route: 'GET /api/recall',
    request: (query) => ({ url: `/api/recall${queryString(query)}` }),
  }),
  get_context: mcpRouteTool({
    name: 'get_context',
    description: 'Context for a topic from past sessions: the most relevant sessions with their key events, lessons and a summary.',
    input: { topic: z.string().min(1).max(2000), agentId: identifier.optional(), userId: z.string().optional(), limit: limit(50) },
    readOnly: true,
    route: 'GET /api/context',
    request: (query) => ({ url: `/api/context${queryString(query)}` }),
  }),
};
