/**
 * Serving the gateway: over stdio (one client, the process's stdin and stdout) and over Streamable
 * HTTP at `/mcp` (many clients). On HTTP, 2026-07-28 requests are served statelessly, one server
 * instance per request; 2025-era clients get a session (Mcp-Session-Id) so the elicitation the
 * gateway sends them mid-call can be answered on the same instance.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import {
  createMcpHandler,
  hostHeaderValidationResponse,
  isLegacyRequest,
  localhostAllowedHostnames,
  WebStandardStreamableHTTPServerTransport,
  type McpServer,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { Gateway } from './gateway.ts';

/** Serves one client on stdin/stdout; resolves when the client closes the stream. */
export function serveGatewayStdio(gateway: Gateway): { closed: Promise<void>; close(): Promise<void> } {
  const keys: string[] = [];
  let closedResolve: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (closedResolve = resolve));
  const handle = serveStdio(
    () => {
      const key = `stdio:${randomUUID()}`;
      keys.push(key);
      return gateway.createServer(key);
    },
    { onerror: (error) => process.stderr.write(`vigil mcp-gateway: ${error.message}\n`) },
  );
  process.stdin.on('end', () => closedResolve());
  return {
    closed,
    async close() {
      await handle.close();
      for (const key of keys) await gateway.endSession(key);
      closedResolve();
    },
  };
}

export interface GatewayHttpOptions {
  port: number;
  host?: string;
  /** When set, every request must carry `Authorization: Bearer <token>`. */
  token?: string;
}

export interface GatewayHttpServer {
  url: string;
  close(): Promise<void>;
}

interface LegacySession {
  transport: WebStandardStreamableHTTPServerTransport;
  server: McpServer;
}

const jsonRpcError = (status: number, message: string): Response => Response.json({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }, { status });

function tokenMatches(header: string | null, token: string): boolean {
  const given = Buffer.from(header?.replace(/^Bearer\s+/i, '') ?? '');
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

async function toWebRequest(req: IncomingMessage, res: ServerResponse, base: string): Promise<Request> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  const chunks: Buffer[] = [];
  if (hasBody) for await (const chunk of req) chunks.push(chunk as Buffer);
  const abort = new AbortController();
  // The response's close, not the socket's: a keep-alive socket outlives many requests.
  res.once('close', () => abort.abort());
  return new Request(new URL(req.url ?? '/', base), { method: req.method, headers, body: hasBody ? Buffer.concat(chunks) : undefined, signal: abort.signal });
}

async function writeWebResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => (headers[name] = value));
  res.writeHead(response.status, headers);
  if (!response.body) {
    res.end();
    return;
  }
  // Server-sent events stream: write as it comes, stop when the client goes away.
  const body = Readable.fromWeb(response.body as never);
  res.on('close', () => body.destroy());
  body.pipe(res);
}

export async function serveGatewayHttp(gateway: Gateway, options: GatewayHttpOptions): Promise<GatewayHttpServer> {
  const host = options.host ?? '127.0.0.1';
  const loopback = host === '127.0.0.1' || host === 'localhost' || host === '::1';
  const modern = createMcpHandler(() => gateway.createServer(), {
    legacy: 'reject',
    onerror: (error) => process.stderr.write(`vigil mcp-gateway: ${error.message}\n`),
  });
  const legacy = new Map<string, LegacySession>();

  const legacyRequest = async (request: Request): Promise<Response> => {
    const id = request.headers.get('mcp-session-id');
    if (id) {
      const known = legacy.get(id);
      if (!known) return jsonRpcError(404, 'Unknown or closed MCP session: initialize again.');
      return known.transport.handleRequest(request);
    }
    if (request.method !== 'POST') return jsonRpcError(400, 'Missing Mcp-Session-Id header.');
    const key = `http:${randomUUID()}`;
    const server = gateway.createServer(key);
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => void legacy.set(sessionId, { transport, server }),
      onsessionclosed: async (sessionId) => {
        legacy.delete(sessionId);
        await gateway.endSession(key);
      },
    });
    await server.connect(transport);
    return transport.handleRequest(request);
  };

  const handle = async (request: Request): Promise<Response> => {
    if (new URL(request.url).pathname !== '/mcp') return jsonRpcError(404, 'Not found: the gateway serves MCP at /mcp.');
    // A web page whose name resolves to this machine (DNS rebinding) must not reach a local gateway.
    if (loopback) {
      const rejected = hostHeaderValidationResponse(request, localhostAllowedHostnames());
      if (rejected) return rejected;
    }
    if (options.token !== undefined && !tokenMatches(request.headers.get('authorization'), options.token)) {
      return jsonRpcError(401, 'Missing or wrong bearer token (VIGIL_GATEWAY_TOKEN).');
    }
    if (request.method === 'POST' && !/^application\/json\b/i.test(request.headers.get('content-type') ?? '')) {
      return jsonRpcError(415, 'Content-Type must be application/json.');
    }
    return (await isLegacyRequest(request.clone())) ? legacyRequest(request) : modern.fetch(request);
  };

  let base = '';
  const http: HttpServer = createServer((req, res) => {
    void (async () => {
      try {
        await writeWebResponse(await handle(await toWebRequest(req, res, base)), res);
      } catch (error) {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: (error as Error).message }, id: null }));
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, host, () => resolve());
  });
  const address = http.address() as AddressInfo;
  base = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  return {
    url: `${base}/mcp`,
    async close() {
      for (const session of legacy.values()) await session.transport.close().catch(() => undefined);
      legacy.clear();
      await modern.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
