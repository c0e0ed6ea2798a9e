import type { CallToolResult, McpRequestContext, McpServer, StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import type { FastifyReply, FastifyRequest, InjectOptions } from 'fastify';
import { z } from 'zod';
import { ServiceError } from './errors.ts';
import { isLoopbackHost } from './config.ts';
import { readJsonBody, type RouteScope, type ZodApp } from './http.ts';
import type { McpRouteTool } from './mcp-tool.ts';

export * from './mcp-tool.ts';

/** The media type a Streamable HTTP client must accept beside JSON (server-sent events). */
const SSE_MEDIA_TYPE = 'text/event-stream';

export interface McpEndpointOptions {
  /** The server name MCP clients see (`initialize` answer). */
  name: string;
  version: string;
  tools: readonly McpRouteTool[];
  /** The scope `/mcp` itself needs: any key of the service (each tool then needs its route's). */
  scope: RouteScope;
  /**
   * The host the service listens on. On a loopback address, a request whose Host or Origin names
   * another host is refused (403): a web page whose name resolves to 127.0.0.1 (DNS rebinding)
   * cannot reach the local server through a browser.
   */
  listenHost: string;
}

// The credentials a tool call carries to its route: the MCP request's own.
const FORWARDED_HEADERS = ['authorization', 'x-api-key'] as const;

/** The body of every refusal /mcp answers itself (the service's error body stays for 401, 413 and 429). */
const jsonRpcErrorSchema = z
  .object({
    jsonrpc: z.literal('2.0'),
    error: z.object({ code: z.number().int(), message: z.string() }),
    id: z.union([z.string(), z.number(), z.null()]),
  })
  .meta({ id: 'JsonRpcError' });

function jsonRpcError(status: number, code: number, message: string, id: string | number | null = null): Response {
  return Response.json({ jsonrpc: '2.0', error: { code, message }, id }, { status });
}

/**
 * A 2026-07-28 `subscriptions/listen` request: the id it carries, else undefined. Such a stream
 * would stay open on one instance for notifications Vigil never sends (its tools are fixed, and
 * nothing is kept between requests), so it is refused as a method the server does not offer.
 */
function listenRequestId(message: unknown): string | number | null | undefined {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return undefined;
  const { method, id } = message as { method?: unknown; id?: unknown };
  if (method !== 'subscriptions/listen') return undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** Whether a Host header (`name:port`) or Origin (`scheme://name:port`) names a loopback host. */
function namesLoopback(value: string, isOrigin: boolean): boolean {
  try {
    const hostname = new URL(isOrigin ? value : `http://${value}`).hostname.replace(/^\[(.*)\]$/, '$1');
    return isLoopbackHost(hostname);
  } catch {
    return false;
  }
}

/** The route's answer as a tool result: its JSON on 2xx, otherwise an error result with the service's own error body. */
function toolResult(route: string, status: number, body: string, textOnly: boolean): CallToolResult {
  if (status >= 200 && status < 300) {
    const value: unknown = body === '' ? {} : JSON.parse(body);
    const content: CallToolResult['content'] = [{ type: 'text', text: JSON.stringify(value, null, 2) }];
    if (textOnly) return { content };
    const structured = Array.isArray(value) ? { items: value } : (value as Record<string, unknown>);
    return { content, structuredContent: structured };
  }
  return { isError: true, content: [{ type: 'text', text: `${route} answered ${status}: ${body}` }] };
}

/**
 * A tool's arguments schema whose JSON Schema is computed once. Every request gets a new SDK
 * instance, which would otherwise convert the schema again (tools/list, and the 2026-07-28 header
 * checks of each tools/call); built once, zod also compiles its parser once.
 */
function argumentsSchema(shape: z.ZodRawShape): StandardSchemaWithJSON {
  const schema = z.object(shape);
  const standard = schema['~standard'];
  const converted = new Map<string, Record<string, unknown>>();
  const convert =
    (io: 'input' | 'output') =>
    (options: { target: string }): Record<string, unknown> => {
      const key = `${io} ${options.target}`;
      if (!converted.has(key)) converted.set(key, standard.jsonSchema[io](options as Parameters<typeof standard.jsonSchema.input>[0]));
      return converted.get(key)!;
    };
  return { '~standard': { ...standard, jsonSchema: { input: convert('input'), output: convert('output') } } };
}

/**
 * `POST /mcp`: the service's tools over MCP Streamable HTTP, protocol 2026-07-28 and 2025-11-25 down
 * to 2024-11-05, stateless (no `Mcp-Session-Id`): each POST is answered on its own, with JSON rather
 * than an SSE stream, so any instance behind a load
 * balancer can take any request and nothing is kept between them. `GET` and `DELETE` (the
 * server-to-client stream and session end, which need a session) answer 405. Register it in a
 * feature of its own: it reads `/mcp` bodies itself, to answer a malformed one with a JSON-RPC error.
 */
export function registerMcpEndpoint(app: ZodApp, options: McpEndpointOptions): void {
  // Read on the first call, when every route is registered.
  let scopeOfTool: Map<string, string> | undefined;
  const scopes = (): Map<string, string> => {
    if (scopeOfTool !== undefined) return scopeOfTool;
    const table = new Map(app.routeTable.map((route) => [`${route.method} ${route.url}`, route]));
    scopeOfTool = new Map();
    for (const tool of options.tools) {
      const route = table.get(tool.route);
      if (route === undefined) throw new Error(`MCP tool ${tool.name} calls ${tool.route}, which is not a route of ${options.name}`);
      scopeOfTool.set(tool.name, route.scope === undefined ? 'no key' : [route.scope].flat().join(' or '));
    }
    return scopeOfTool;
  };

  // The MCP SDK is loaded at the first /mcp request, not at start: a service nobody reaches over
  // MCP never holds it (its modules and their source text are several MiB of heap).
  type Respond = (webRequest: Request, message: unknown) => Promise<Response>;
  let respond: Promise<Respond> | undefined;
  const loadResponder = (): Promise<Respond> =>
    (respond ??= import('@modelcontextprotocol/server').then(({ createMcpHandler, isLegacyRequest, McpServer, WebStandardStreamableHTTPServerTransport }) => {
      const inputSchemas = new Map(options.tools.map((tool) => [tool.name, argumentsSchema(tool.input)]));
      // One instance per request (an SDK instance serves one exchange at a time); the tools' routes
      // run with the credentials of the request the instance serves.
      const server = (context: Pick<McpRequestContext, 'requestInfo'>): McpServer => {
        const mcp = new McpServer(
          { name: options.name, version: options.version },
          // logging: clients may set a level (2025 eras); the tools send no log messages. The tool
          // list never changes, and a stateless server has no stream to announce it on: no listChanged.
          { capabilities: { tools: { listChanged: false }, logging: {} } },
        );
        const headers: Record<string, string> = {};
        for (const name of FORWARDED_HEADERS) {
          const value = context.requestInfo?.headers.get(name);
          if (typeof value === 'string') headers[name] = value;
        }
        for (const tool of options.tools) {
          const [method, path] = tool.route.split(' ') as [NonNullable<InjectOptions['method']>, string];
          mcp.registerTool(
            tool.name,
            {
              description: `${tool.description} (${tool.route}; needs the ${scopes().get(tool.name)} scope)`,
              inputSchema: inputSchemas.get(tool.name)!,
              annotations: { readOnlyHint: tool.readOnly, openWorldHint: false },
            },
            async (args: unknown) => {
              const call = tool.request(args as never);
              const answer = await app.inject({
                method,
                url: call.url,
                headers: call.body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
                ...(call.body !== undefined && { payload: JSON.stringify(call.body) }),
              });
              return toolResult(`${method} ${path}`, answer.statusCode, answer.body, tool.textOnly === true);
            },
          );
        }
        return mcp;
      };
      // 2026-07-28: each request carries its protocol version (`_meta` and the MCP-Protocol-Version
      // header); no handshake, no session. Earlier versions (an `initialize` handshake first) are
      // served by legacy() below.
      const modern = createMcpHandler(server, { legacy: 'reject' });
      const legacy = async (webRequest: Request, message: unknown): Promise<Response> => {
        const mcp = server({ requestInfo: webRequest });
        // Stateless, and JSON rather than an SSE stream: nothing outlives the request.
        const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        try {
          await mcp.connect(transport);
          return await transport.handleRequest(webRequest, { parsedBody: message });
        } finally {
          await mcp.close();
        }
      };
      return async (webRequest, message) =>
        (await isLegacyRequest(webRequest, message)) ? legacy(webRequest, message) : modern.fetch(webRequest, { parsedBody: message });
    }));

  const answer = async (reply: FastifyReply, response: Response): Promise<FastifyReply> => {
    reply.status(response.status);
    response.headers.forEach((value, name) => void reply.header(name, value));
    return reply.send(await response.text());
  };

  const loopbackOnly = isLoopbackHost(options.listenHost);
  const postMcp = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const { host, origin } = request.headers;
    if (loopbackOnly && (host === undefined || !namesLoopback(host, false) || (origin !== undefined && !namesLoopback(origin, true)))) {
      return answer(reply, jsonRpcError(403, -32000, 'Forbidden: this server listens on loopback and answers only requests addressed to localhost'));
    }
    const contentType = request.headers['content-type'];
    if (!/^application\/json\s*(;|$)/i.test(contentType ?? '')) {
      return answer(reply, jsonRpcError(415, -32000, 'Unsupported Media Type: Content-Type must be application/json'));
    }
    let message: unknown;
    try {
      message = readJsonBody(request.body as Buffer, contentType, (_key, text) => new ServiceError(400, 'invalidJson', text ?? 'Malformed JSON body'));
    } catch (error) {
      const refusal = error as ServiceError;
      return answer(reply, jsonRpcError(refusal.status >= 400 && refusal.status < 500 ? refusal.status : 400, -32700, `Parse error: ${refusal.message}`));
    }
    const listenId = listenRequestId(message);
    if (listenId !== undefined)
      return answer(reply, jsonRpcError(404, -32601, 'Method not found: subscriptions/listen (this server sends no notifications)', listenId));
    const url = `http://${request.headers.host ?? 'localhost'}${request.url}`;
    const webRequest = new Request(url, {
      method: 'POST',
      headers: Object.entries(request.headers).flatMap(([name, value]) => (typeof value === 'string' ? [[name, value] as [string, string]] : [])),
    });
    return answer(reply, await (await loadResponder())(webRequest, message));
  };

  app.register(async (scope) => {
    // The raw bytes: a malformed body is a JSON-RPC parse error (the service's body limit still applies).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    scope.post(
      '/mcp',
      {
        config: { scope: options.scope },
        schema: {
          operationId: 'sendMcpMessage',
          summary: 'MCP over Streamable HTTP (stateless): the service’s tools, each needing the scope of the route it calls',
          description:
            'One JSON-RPC message per POST, answered with JSON (the `Accept` header must list JSON and SSE, else 406). ' +
            'Protocol 2026-07-28: each request carries its version and client in `_meta` and the `MCP-Protocol-Version`, ' +
            '`Mcp-Method` (and `Mcp-Name`) headers, with no handshake (`server/discover`, `tools/list`, `tools/call`). ' +
            'Protocol 2025-11-25 down to 2024-11-05, as the client asks in `initialize` (then `tools/list`, `tools/call`, ' +
            '`ping`, `logging/setLevel`, notifications). Stateless: any instance answers any request. A tool runs its route ' +
            'with the request’s key, so the key needs that route’s scope; a refused call is a tool result with `isError: true` ' +
            'and the route’s answer. A malformed body is a JSON-RPC error (400), never a 500. docs/guide/mcp.md.',
          tags: ['mcp'],
          errorStatuses: [413],
          documentedBody: { 'application/json': { schema: { type: 'object', description: 'A JSON-RPC 2.0 request or notification' } } },
          response: {
            200: z.unknown(),
            202: z.unknown(),
            400: jsonRpcErrorSchema.describe('Malformed JSON (-32700) or not a JSON-RPC message'),
            403: jsonRpcErrorSchema.describe('On a loopback address: a Host or Origin that is not localhost'),
            406: jsonRpcErrorSchema.describe(`Accept does not list application/json and ${SSE_MEDIA_TYPE}`),
            415: jsonRpcErrorSchema.describe('Content-Type is not application/json'),
          },
        },
      },
      postMcp,
    );
    for (const method of ['GET', 'DELETE'] as const) {
      scope.route({
        method,
        url: '/mcp',
        config: { scope: options.scope },
        // Not an operation of this server: stateless, it keeps no stream and no session.
        schema: { hide: true },
        handler: (_request, reply) =>
          answer(reply.header('allow', 'POST'), jsonRpcError(405, -32000, 'Method Not Allowed: this server is stateless; POST each message')),
      });
    }
  });
}
