/**
 * `vigil mcp`: a Model Context Protocol server over stdio. It gives an MCP client (Claude
 * Desktop, an IDE, an agent framework) tools to log events and sessions to observe, to query
 * sessions, events, analytics, recall and context, and to create, list, read and decide gate
 * approval requests — through @vigil/sdk.
 *
 * Configuration (environment): VIGIL_URL (default http://localhost:3400) and VIGIL_API_KEY for
 * observe; VIGIL_GATE_URL (default http://localhost:3000) and VIGIL_GATE_API_KEY for the gate.
 * stdout carries the protocol only; diagnostics go to stderr.
 */
import { createRequire } from 'node:module';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  ApprovalTimeoutError,
  DEFAULT_GATE_URL,
  DEFAULT_OBSERVE_URL,
  ObserveClient,
  VigilApiError,
  VigilError,
  VigilNetworkError,
  type IncomingEvent,
  type ObserveQuery,
} from '@vigil/sdk';
import { z } from 'zod';
import { GateIdentity } from './mcp-identity.ts';

// Read like main.ts does, so `vigil mcp` does not load @vigil/platform's database and HTTP stack.
const { version: VIGIL_VERSION } = createRequire(import.meta.url)('../../../package.json') as { version: string };

export interface McpConfig {
  observeUrl: string;
  observeKey: string | undefined;
  gateUrl: string;
  gateKey: string | undefined;
}

export function mcpConfigFromEnvironment(env: NodeJS.ProcessEnv): McpConfig {
  const value = (name: string): string | undefined => (env[name]?.trim() ? env[name]!.trim() : undefined);
  return {
    observeUrl: value('VIGIL_URL') ?? DEFAULT_OBSERVE_URL,
    observeKey: value('VIGIL_API_KEY'),
    gateUrl: value('VIGIL_GATE_URL') ?? DEFAULT_GATE_URL,
    gateKey: value('VIGIL_GATE_API_KEY'),
  };
}

// The event types POST /api/events accepts (eval_result is the server's own).
const EVENT_TYPES = [
  'session_started',
  'session_ended',
  'tool_call',
  'tool_response',
  'tool_error',
  'approval_requested',
  'approval_granted',
  'approval_denied',
  'approval_expired',
  'form_submitted',
  'form_completed',
  'form_expired',
  'llm_call',
  'llm_response',
  'cost_tracked',
  'alert_triggered',
  'alert_resolved',
  'custom',
] as const satisfies readonly IncomingEvent['eventType'][];

const SEVERITIES = ['debug', 'info', 'warn', 'error', 'critical'] as const;
const URGENCIES = ['low', 'normal', 'high', 'critical'] as const;
const REQUEST_STATUSES = ['pending', 'approved', 'denied', 'expired'] as const;
const isoTime = z.string().describe('ISO 8601 time, e.g. 2026-01-31T09:00:00Z');
const jsonObject = z.record(z.string(), z.unknown());
const identifier = z.string().min(1).max(256);
const limit = (max: number) => z.number().int().min(1).max(max).optional();

/** What each get_analytics report takes besides from and to (its route's query parameters). */
const ANALYTICS_REPORT_PARAMETERS = {
  overview: ['granularity', 'agentId'],
  llm: ['granularity', 'agentId', 'model', 'provider'],
  costs: ['granularity', 'agentId'],
  agents: ['agentId'],
  tools: ['agentId'],
} as const;

function result(value: unknown): CallToolResult {
  const structured = Array.isArray(value) ? { items: value } : (value as Record<string, unknown>);
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: structured };
}

/** A tool answer for a failed call: the service's own message, and what to check. */
function failure(error: unknown, config: McpConfig): CallToolResult {
  let text: string;
  if (error instanceof VigilApiError) {
    const keyVariable = error.service === 'gate' ? 'VIGIL_GATE_API_KEY' : 'VIGIL_API_KEY';
    const hint =
      error.status === 401
        ? ` (check ${keyVariable}${(error.service === 'gate' ? config.gateKey : config.observeKey) === undefined ? ', which is not set' : ''})`
        : error.status === 403
          ? ` (the key in ${keyVariable} lacks the scope this needs)`
          : '';
    const details = error.details.length > 0 ? `\n${error.details.map((d) => `- ${d.path}: ${d.message}`).join('\n')}` : '';
    text = `${error.service} answered ${error.status}${error.code ? ` ${error.code}` : ''}: ${error.message}${hint}${details}`;
  } else if (error instanceof VigilNetworkError) {
    const variable = error.service === 'gate' ? `VIGIL_GATE_URL=${config.gateUrl}` : `VIGIL_URL=${config.observeUrl}`;
    text = `${error.message} (is the ${error.service} service running at ${variable}?)`;
  } else if (error instanceof VigilError) {
    text = error.message;
  } else {
    text = `Unexpected error: ${(error as Error)?.message ?? String(error)}`;
  }
  return { isError: true, content: [{ type: 'text', text }] };
}

function defined<T extends Record<string, unknown>>(object: T): T {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined)) as T;
}

/** The MCP server with every Vigil tool registered (not yet connected to a transport). */
export function createMcpServer(config: McpConfig): McpServer {
  const server = new McpServer({ name: 'vigil', version: VIGIL_VERSION }, { capabilities: { tools: {} } });
  const observe = new ObserveClient({ baseUrl: config.observeUrl, apiKey: config.observeKey });
  const client = () => server.server.getClientVersion();
  const gate = new GateIdentity({ baseUrl: config.gateUrl, apiKey: config.gateKey }, () => client()?.name);

  const tool = <Shape extends z.ZodRawShape>(
    name: string,
    description: string,
    shape: Shape,
    readOnly: boolean,
    run: (args: z.infer<z.ZodObject<Shape>>) => Promise<unknown>,
  ): void => {
    server.registerTool(name, { description, inputSchema: shape, annotations: { readOnlyHint: readOnly, openWorldHint: false } }, (async (
      args: z.infer<z.ZodObject<Shape>>,
    ) => {
      try {
        return result(await run(args));
      } catch (error) {
        return failure(error, config);
      }
    }) as never);
  };

  // --------------------------------------------------------------------------------------------
  // Logging

  tool(
    'start_session',
    'Start an observe session for an agent run (emits session_started). Returns the sessionId to pass to log_event and end_session.',
    {
      agentId: identifier.describe('Which agent runs'),
      sessionId: identifier.optional().describe('Default: a new UUID'),
      agentName: z.string().max(500).optional(),
      tags: z.array(z.string().min(1).max(200)).max(100).optional(),
    },
    false,
    async ({ agentId, sessionId, agentName, tags }) => {
      const id = sessionId ?? crypto.randomUUID();
      const info = client();
      const answer = await observe.ingest([
        {
          sessionId: id,
          agentId,
          eventType: 'session_started',
          payload: defined({ agentName, tags, mcpClientInfo: info ? { name: info.name, version: info.version } : undefined }),
        },
      ]);
      return { sessionId: id, event: answer.events[0] };
    },
  );

  tool(
    'log_event',
    'Record one event in a session (tool_call, tool_response, tool_error, llm_call, llm_response, custom, …). The payload fields depend on eventType; the answer names any missing field.',
    {
      sessionId: identifier,
      agentId: identifier,
      eventType: z.enum(EVENT_TYPES),
      payload: jsonObject.describe('e.g. tool_call: {toolName, callId, arguments}; custom: {type, data}'),
      severity: z.enum(SEVERITIES).optional(),
      metadata: jsonObject.optional(),
      timestamp: isoTime.optional().describe('Default: now'),
    },
    false,
    async (event) => {
      const answer = await observe.ingest([defined(event) as IncomingEvent]);
      return answer.events[0];
    },
  );

  tool(
    'end_session',
    'End a session (emits session_ended): reason completed (default), error, timeout or manual.',
    {
      sessionId: identifier,
      agentId: identifier,
      reason: z.enum(['completed', 'error', 'timeout', 'manual']).optional(),
      summary: z.string().max(10_000).optional(),
    },
    false,
    async ({ sessionId, agentId, reason, summary }) => {
      await observe.ingest([{ sessionId, agentId, eventType: 'session_ended', payload: defined({ reason: reason ?? 'completed', summary }) }]);
      return observe.getSession(sessionId);
    },
  );

  // --------------------------------------------------------------------------------------------
  // Queries

  tool(
    'query_sessions',
    'List sessions, newest first: filter by agent, status (active, completed, error; comma-separated), tags (all must match) and start time.',
    {
      agentId: identifier.optional(),
      status: z.string().optional(),
      tags: z.array(z.string()).optional(),
      from: isoTime.optional(),
      to: isoTime.optional(),
      limit: limit(500),
      offset: z.number().int().min(0).optional(),
    },
    true,
    async ({ tags, ...query }) => observe.listSessions(defined({ ...query, tags: tags?.join(',') }) as ObserveQuery<'/api/sessions'>),
  );

  tool(
    'get_session',
    'One session (status, counters, cost, tags); with includeEvents, its timeline and whether its hash chain verifies.',
    { sessionId: identifier, includeEvents: z.boolean().optional() },
    true,
    async ({ sessionId, includeEvents }) => {
      const session = await observe.getSession(sessionId);
      if (!includeEvents) return session;
      const timeline = await observe.getTimeline(sessionId);
      return { session, chainValid: timeline.chainValid, events: timeline.events };
    },
  );

  tool(
    'query_events',
    'Search events: by session, agent, types and severities (comma-separated), time range and full-text search over payloads.',
    {
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
    true,
    async (query) => observe.listEvents(defined(query)),
  );

  tool(
    'get_analytics',
    'Analytics over a time range (default the last 24 h), all of one agent with agentId: overview (events, tool calls, errors, latency, cost per bucket), llm (calls, tokens, cost by model; also model and provider filters), costs (by agent), agents or tools (these two without granularity).',
    {
      report: z.enum(['overview', 'llm', 'costs', 'agents', 'tools']).optional().describe('Default overview'),
      from: isoTime.optional(),
      to: isoTime.optional(),
      granularity: z.enum(['hour', 'day', 'week']).optional(),
      agentId: identifier.optional(),
      model: z.string().optional(),
      provider: z.string().optional(),
    },
    true,
    async ({ report = 'overview', ...given }) => {
      const query = defined(given);
      // A filter the report cannot honour is refused by name, never dropped (the answer would look filtered).
      const takes: readonly string[] = ['from', 'to', ...ANALYTICS_REPORT_PARAMETERS[report]];
      const refused = Object.keys(query).filter((name) => !takes.includes(name));
      if (refused.length > 0) throw new VigilError(`The ${report} report does not take ${refused.join(', ')}; it takes ${takes.join(', ')}.`);
      switch (report) {
        case 'llm':
          return observe.llmAnalytics(query);
        case 'costs':
          return observe.costAnalytics(query);
        case 'agents':
          return observe.agentAnalytics(query);
        case 'tools':
          return observe.toolAnalytics(query);
        default:
          return observe.analytics(query);
      }
    },
  );

  tool(
    'recall',
    'Semantic search over recorded events and sessions ("when did the payment tool fail?"), best matches first.',
    {
      query: z.string().min(1).max(2000),
      scope: z.enum(['all', 'events', 'sessions']).optional(),
      agentId: identifier.optional(),
      from: isoTime.optional(),
      to: isoTime.optional(),
      limit: limit(100),
      minScore: z.number().min(0).max(1).optional(),
    },
    true,
    async (query) => observe.recall(defined(query)),
  );

  tool(
    'get_context',
    'Context for a topic from past sessions: the most relevant sessions with their key events, lessons (with the memory integration) and a summary.',
    { topic: z.string().min(1).max(2000), agentId: identifier.optional(), userId: z.string().optional(), limit: limit(50) },
    true,
    async (query) => observe.context(defined(query)),
  );

  // --------------------------------------------------------------------------------------------
  // Approvals

  tool(
    'create_approval_request',
    'Ask the gate to approve an action. A policy may decide at once; otherwise the request waits for a human. With waitSeconds, wait that long for the decision.',
    {
      action: z.string().min(1).max(200),
      params: jsonObject.optional(),
      context: jsonObject.optional().describe('e.g. {sessionId, agentId} to link it to an observe session'),
      urgency: z.enum(URGENCIES).optional(),
      expiresAt: isoTime.optional(),
      waitSeconds: z.number().min(0).max(600).optional(),
    },
    false,
    async ({ waitSeconds, ...request }) =>
      gate.run(async (client) => {
        const created = await client.createRequest(defined(request));
        if (!waitSeconds || created.status !== 'pending') return created;
        try {
          return await client.waitForDecision(created.id, { timeoutMs: waitSeconds * 1000 }, created);
        } catch (error) {
          if (error instanceof ApprovalTimeoutError) return { ...(await client.getRequest(created.id)), waited: `no decision within ${waitSeconds} s` };
          throw error;
        }
      }),
  );

  tool(
    'list_approval_requests',
    'List approval requests, newest first: filter by status (pending, approved, denied, expired), action and urgency.',
    {
      status: z.enum(REQUEST_STATUSES).optional(),
      action: z.string().optional(),
      urgency: z.enum(URGENCIES).optional(),
      limit: limit(500),
      offset: z.number().int().min(0).optional(),
    },
    true,
    async (query) => gate.run(async (client) => ({ requests: await client.listRequests(defined(query)) })),
  );

  tool(
    'get_approval_request',
    'One approval request: status, parameters, decision and who made it; with includeAudit, its audit trail.',
    { requestId: z.string().min(1).max(100), includeAudit: z.boolean().optional() },
    true,
    async ({ requestId, includeAudit }) =>
      gate.run(async (client) => {
        const request = await client.getRequest(requestId);
        return includeAudit ? { ...request, audit: await client.getAudit(requestId) } : request;
      }),
  );

  tool(
    'decide_approval_request',
    'Approve or deny a pending approval request. The gate records the decision as made by this MCP client (mcp:<client name>).',
    { requestId: z.string().min(1).max(100), decision: z.enum(['approved', 'denied']), reason: z.string().max(5000).optional() },
    false,
    async ({ requestId, decision, reason }) => gate.run((client) => client.decide(requestId, decision, reason)),
  );

  return server;
}

/** `vigil mcp`: serves over stdin/stdout until the client closes the stream. */
export async function runMcpServer(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const config = mcpConfigFromEnvironment(env);
  const server = createMcpServer(config);
  const transport = new StdioServerTransport();
  transport.onclose = () => process.exit(0);
  process.stdin.on('end', () => void server.close());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void server.close().finally(() => process.exit(0)));
  await server.connect(transport);
  const missing = [config.observeKey === undefined && 'VIGIL_API_KEY', config.gateKey === undefined && 'VIGIL_GATE_API_KEY'].filter(Boolean);
  process.stderr.write(
    `vigil mcp: serving on stdio (observe ${config.observeUrl}, gate ${config.gateUrl})${missing.length ? `; not set: ${missing.join(', ')}` : ''}\n`,
  );
}
