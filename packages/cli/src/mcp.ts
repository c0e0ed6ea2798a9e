/**
 * `vigil mcp`: a Model Context Protocol server over stdio. It gives an MCP client (Claude
 * Desktop, an IDE, an agent framework) tools to log events and sessions to observe, to query
 * sessions, events, analytics, recall and context, and to create, list, read and decide gate
 * approval requests — through @vigil/sdk.
 *
 * Configuration (environment): VIGIL_URL (default http://localhost:3400) and VIGIL_API_KEY for
 * observe; VIGIL_GATE_URL (default http://localhost:3000) and VIGIL_GATE_API_KEY for the gate.
 * stdout carries the protocol only; diagnostics go to stderr. Protocol 2026-07-28 (no handshake)
 * and the 2025 versions (initialize first), as the client opens.
 *
 * The tools the services also serve at /mcp keep their names, descriptions and arguments from the
 * services' tables (@vigil/observe/mcp-tools, @vigil/gate/mcp-tools); some take more here.
 */
import { createRequire } from 'node:module';
import { CLIENT_INFO_META_KEY, McpServer, type CallToolResult, type Implementation, type ServerContext } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { GATE_MCP_TOOLS } from '@vigil/gate/mcp-tools';
import { OBSERVE_MCP_TOOLS } from '@vigil/observe/mcp-tools';
import type { McpRouteTool } from '@vigil/platform/mcp-tool';
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

const identifier = z.string().min(1).max(256);

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
  // 2025 clients name themselves in the handshake; 2026-07-28 clients in each request's _meta.
  let requestClient: Implementation | undefined;
  const client = (): Implementation | undefined => requestClient ?? server.server.getClientVersion();
  const gate = new GateIdentity({ baseUrl: config.gateUrl, apiKey: config.gateKey }, () => client()?.name);

  const tool = <Shape extends z.ZodRawShape>(
    name: string,
    description: string,
    shape: Shape,
    readOnly: boolean,
    run: (args: z.infer<z.ZodObject<Shape>>) => Promise<unknown>,
  ): void => {
    server.registerTool(
      name,
      { description, inputSchema: z.object(shape), annotations: { readOnlyHint: readOnly, openWorldHint: false } },
      async (args: z.infer<z.ZodObject<Shape>>, ctx: ServerContext) => {
        requestClient = ((ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_INFO_META_KEY] as Implementation | undefined) ?? requestClient;
        try {
          return result(await run(args));
        } catch (error) {
          return failure(error, config);
        }
      },
    );
  };
  /** A tool of a service's table, run here through @vigil/sdk; `more` adds arguments (and says what they do). */
  const tableTool = <Shape extends z.ZodRawShape, More extends z.ZodRawShape = Record<never, never>>(
    base: McpRouteTool<Shape>,
    run: (args: z.infer<z.ZodObject<Omit<Shape, keyof More> & More>>) => Promise<unknown>,
    more?: { input: More; description: string },
  ): void =>
    tool(base.name, more?.description ?? base.description, { ...base.input, ...more?.input } as unknown as Omit<Shape, keyof More> & More, base.readOnly, run);

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

  const { log_event, query_sessions, get_session, query_events, get_analytics, recall, get_context } = OBSERVE_MCP_TOOLS;
  tableTool(log_event, async (event) => (await observe.ingest([defined(event) as IncomingEvent])).events[0], {
    // The types observe accepts, named here so a client sees them in the schema.
    input: { eventType: z.enum(EVENT_TYPES) },
    description: log_event.description,
  });

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

  tableTool(query_sessions, async ({ tags, ...query }) => observe.listSessions(defined({ ...query, tags: tags?.join(',') }) as ObserveQuery<'/api/sessions'>));

  tableTool(
    get_session,
    async ({ sessionId, includeEvents }) => {
      const session = await observe.getSession(sessionId);
      if (!includeEvents) return session;
      const timeline = await observe.getTimeline(sessionId);
      return { session, chainValid: timeline.chainValid, events: timeline.events };
    },
    {
      input: { includeEvents: z.boolean().optional() },
      description: 'One session (status, counters, cost, tags); with includeEvents, its timeline and whether its hash chain verifies.',
    },
  );

  tableTool(query_events, async (query) => observe.listEvents(defined(query)));

  tableTool(
    get_analytics,
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
    {
      input: {
        report: z.enum(['overview', 'llm', 'costs', 'agents', 'tools']).optional().describe('Default overview'),
        model: z.string().optional(),
        provider: z.string().optional(),
      },
      description:
        'Analytics over a time range (default the last 24 h), all of one agent with agentId: overview (events, tool calls, errors, latency, cost per bucket), llm (calls, tokens, cost by model; also model and provider filters), costs (by agent), agents or tools (these two without granularity).',
    },
  );

  tableTool(recall, async (query) => observe.recall(defined(query)));

  tableTool(get_context, async (query) => observe.context(defined(query)));

  // --------------------------------------------------------------------------------------------
  // Approvals

  const { create_approval_request, list_approval_requests, get_approval_request, decide_approval_request } = GATE_MCP_TOOLS;
  tableTool(
    create_approval_request,
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
    {
      input: { waitSeconds: z.number().min(0).max(600).optional() },
      description:
        'Ask the gate to approve an action. A policy may decide at once; otherwise the request waits for a human. With waitSeconds, wait that long for the decision.',
    },
  );

  tableTool(list_approval_requests, async (query) => gate.run(async (client) => ({ requests: await client.listRequests(defined(query)) })));

  tableTool(
    get_approval_request,
    async ({ requestId, includeAudit }) =>
      gate.run(async (client) => {
        const request = await client.getRequest(requestId);
        return includeAudit ? { ...request, audit: await client.getAudit(requestId) } : request;
      }),
    {
      input: { includeAudit: z.boolean().optional() },
      description: 'One approval request: status, parameters, decision and who made it; with includeAudit, its audit trail.',
    },
  );

  tableTool(decide_approval_request, async ({ requestId, decision, reason }) => gate.run((client) => client.decide(requestId, decision, reason)), {
    input: {},
    description: 'Approve or deny a pending approval request. The gate records the decision as made by this MCP client (mcp:<client name>).',
  });

  return server;
}

/** `vigil mcp`: serves over stdin/stdout until the client closes the stream. */
export async function runMcpServer(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const config = mcpConfigFromEnvironment(env);
  // One server per connection (and one for a 2026-07-28 client's server/discover probe).
  const served = serveStdio(() => createMcpServer(config));
  const stop = (): Promise<void> => served.close().finally(() => process.exit(0));
  process.stdin.on('end', () => void stop());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void stop());
  const missing = [config.observeKey === undefined && 'VIGIL_API_KEY', config.gateKey === undefined && 'VIGIL_GATE_API_KEY'].filter(Boolean);
  process.stderr.write(
    `vigil mcp: serving on stdio (observe ${config.observeUrl}, gate ${config.gateUrl})${missing.length ? `; not set: ${missing.join(', ')}` : ''}\n`,
  );
}
