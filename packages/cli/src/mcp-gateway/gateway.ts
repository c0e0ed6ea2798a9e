/**
 * `vigil mcp-gateway`: an MCP server in front of upstream MCP servers that puts every tool call
 * behind the gate. A call becomes a gate request (action: the tool's name as the gateway lists it,
 * params: its arguments); an allowed call runs once, a denied or expired one answers a tool error
 * with the reason, and a call routed to a human answers `input_required` with a URL-mode
 * elicitation of the request's decision page and an HMAC-sealed `requestState` naming the request
 * (the MCP SDK turns this into a server-to-client elicitation for 2025-era clients). Every call
 * is recorded in observe (tool_call, then tool_response or tool_error, with the approval's id),
 * in one session per MCP client session.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import {
  createRequestStateCodec,
  inputRequired,
  McpServer,
  type CallToolResult,
  type InputRequiredResult,
  type RequestStateCodec,
  type ServerContext,
  type Tool,
} from '@modelcontextprotocol/server';
import { ApprovalTimeoutError, GateClient, ObserveClient, redeemOutcome, VigilApiError, type ApprovalRequest, type VigilSession } from '@vigil/sdk';
import type { GatewayConfig } from './config.ts';
import { keepAliveFetch, type KeepAliveFetch } from './http-fetch.ts';
import { Upstream, UpstreamError } from './upstreams.ts';

const { version: VIGIL_VERSION } = createRequire(import.meta.url)('../../../../package.json') as { version: string };

/** Separates the upstream's name from its tool's when the gateway fronts several servers. */
export const NAMESPACE_SEPARATOR = '__';

/** What the sealed requestState carries: the request, the call it was made for, and a one-time nonce. */
export interface ApprovalState {
  requestId: string;
  tool: string;
  argsDigest: string;
  nonce: string;
}

interface Route {
  upstream: Upstream;
  tool: string;
}

/** Hex SHA-256 of the arguments as JSON with sorted keys (state binding, not a signature). */
export function argumentsDigest(args: unknown): string {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : value !== null && typeof value === 'object'
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
          )
        : value;
  return createHash('sha256')
    .update(JSON.stringify(canonical(args ?? {})))
    .digest('hex');
}

const toolError = (text: string): CallToolResult => ({ isError: true, content: [{ type: 'text', text }] });

function errorText(error: unknown): string {
  if (error instanceof VigilApiError) return `the gate answered ${error.status}${error.code ? ` ${error.code}` : ''}: ${error.message}`;
  return (error as Error)?.message ?? String(error);
}

export class Gateway {
  readonly gate: GateClient;
  readonly observe: ObserveClient | undefined;
  readonly upstreams = new Map<string, Upstream>();
  private readonly codec: RequestStateCodec<ApprovalState>;
  /** Nonces of request states already used: each state is good for one round. */
  private readonly usedNonces = new Map<string, number>();
  private readonly sessions = new Map<string, VigilSession>();
  /** Confirmations sent after the call answered (awaited on close). */
  private readonly confirming = new Set<Promise<void>>();
  private readonly stateTtlSeconds: number;
  /** The gate's and observe's connections, kept alive between calls. */
  private readonly http: KeepAliveFetch = keepAliveFetch();

  constructor(readonly config: GatewayConfig) {
    const serviceMs = config.timeouts.serviceSeconds * 1000;
    this.gate = new GateClient({
      baseUrl: config.gate.url,
      apiKey: config.gate.apiKey,
      timeoutMs: serviceMs,
      fetch: this.http.fetch,
      ...(config.gate.publicKey !== undefined && { receiptPublicKey: config.gate.publicKey }),
    });
    this.observe =
      config.observe && new ObserveClient({ baseUrl: config.observe.url, apiKey: config.observe.apiKey, timeoutMs: serviceMs, fetch: this.http.fetch });
    const clientInfo = { name: 'vigil-mcp-gateway', version: VIGIL_VERSION };
    const timeouts = { connectMs: config.timeouts.connectSeconds * 1000, callMs: config.timeouts.callSeconds * 1000 };
    for (const [name, upstream] of Object.entries(config.upstreams)) this.upstreams.set(name, new Upstream(name, upstream, timeouts, clientInfo));
    // A state lives as long as one wait for the human plus the client's round trip.
    this.stateTtlSeconds = Math.ceil(config.approval.waitSeconds * 2 + 60);
    this.codec = createRequestStateCodec<ApprovalState>({
      key: config.approval.stateKey ?? crypto.getRandomValues(new Uint8Array(32)),
      ttlSeconds: this.stateTtlSeconds,
    });
  }

  private get namespaced(): boolean {
    return this.upstreams.size > 1;
  }

  private route(name: string): Route | undefined {
    if (!this.namespaced) {
      const [upstream] = this.upstreams.values();
      return { upstream: upstream!, tool: name };
    }
    const at = name.indexOf(NAMESPACE_SEPARATOR);
    const upstream = at > 0 ? this.upstreams.get(name.slice(0, at)) : undefined;
    return upstream && { upstream, tool: name.slice(at + NAMESPACE_SEPARATOR.length) };
  }

  /** Every upstream's tools, named `<server>__<tool>` when there are several servers. */
  async listTools(): Promise<Tool[]> {
    const lists = await Promise.all(
      [...this.upstreams.values()].map(async (upstream) => {
        const tools = (await upstream.listTools()) as Tool[];
        return this.namespaced ? tools.map((tool) => ({ ...tool, name: `${upstream.name}${NAMESPACE_SEPARATOR}${tool.name}` })) : tools;
      }),
    );
    return lists.flat();
  }

  /** The observe session of one MCP client session (none without observe). */
  session(key: string, client: { name: string; version: string } | undefined): VigilSession | undefined {
    if (!this.observe) return undefined;
    let session = this.sessions.get(key);
    if (!session) {
      session = this.observe.startSession({
        agentId: this.config.agentId,
        tags: ['mcp-gateway'],
        payload: client ? { mcpClientInfo: { name: client.name, version: client.version } } : {},
      });
      this.sessions.set(key, session);
    }
    return session;
  }

  async endSession(key: string): Promise<void> {
    await this.recorded();
    const session = this.sessions.get(key);
    this.sessions.delete(key);
    await session?.end().catch(() => undefined);
  }

  decisionUrl(requestId: string): string {
    const base = (this.config.dashboardUrl ?? this.config.observe?.url ?? this.config.gate.url).replace(/\/+$/, '');
    return `${base}/approvals/${encodeURIComponent(requestId)}`;
  }

  /** The `requestState.verify` hook: the MAC and expiry (the codec), then single use. */
  async verifyState(state: string, ctx: ServerContext): Promise<ApprovalState> {
    const payload = await this.codec.verify(state, ctx);
    const now = Date.now();
    for (const [nonce, until] of this.usedNonces) if (until < now) this.usedNonces.delete(nonce);
    if (typeof payload?.nonce !== 'string' || this.usedNonces.has(payload.nonce)) throw new Error('replayed');
    this.usedNonces.set(payload.nonce, now + this.stateTtlSeconds * 1000);
    return payload;
  }

  /**
   * One tools/call. `canElicitUrl`: the client declared URL-mode elicitation, so a pending request
   * answers input_required with the decision page; without it the call waits for the decision.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    ctx: ServerContext,
    sessionKey: string,
    client: { name: string; version: string } | undefined,
    canElicitUrl: boolean,
  ): Promise<CallToolResult | InputRequiredResult> {
    const route = this.route(name);
    if (!route) return toolError(`Unknown tool ${name}: the gateway lists its tools as <server>${NAMESPACE_SEPARATOR}<tool>.`);
    const session = this.session(sessionKey, client);
    const state = ctx.mcpReq.requestState<ApprovalState>();
    const waitMs = this.config.approval.waitSeconds * 1000;

    let request: ApprovalRequest;
    try {
      if (state === undefined) {
        request = await this.gate.createRequest({
          action: name,
          params: args,
          context: {
            via: 'mcp-gateway',
            mcpServer: route.upstream.name,
            tool: route.tool,
            agentId: this.config.agentId,
            ...(session && { sessionId: session.id, recordedByAgent: true }),
            ...(client && { mcpClient: client.name }),
          },
          expiresAt: new Date(Date.now() + this.config.approval.expiresInSeconds * 1000).toISOString(),
          // A policy approval at once comes redeemed for this client: no second round trip before the call.
          redeem: true,
        });
        this.record(session, 'approval_requested', { requestId: request.id, action: name, params: args, urgency: request.urgency });
        if (request.status === 'pending' && !canElicitUrl) request = await this.waitForDecision(request, waitMs, ctx.mcpReq.signal);
      } else {
        // The state is authentic and unused (verifyState); it must also be this very call's.
        if (state.tool !== name || state.argsDigest !== argumentsDigest(args)) {
          return toolError('The approval this call carries was given for another tool call (other tool or arguments); the call was not run.');
        }
        request = await this.gate.getRequest(state.requestId);
        const answer = ctx.mcpReq.inputResponses?.approval as { action?: string } | undefined;
        if (request.status === 'pending' && answer && answer.action !== 'accept') {
          return toolError(`The approval page was not opened (${answer.action ?? 'no answer'}); request ${request.id} stays pending and the call was not run.`);
        }
        request = await this.waitForDecision(request, waitMs, ctx.mcpReq.signal);
      }
    } catch (error) {
      return toolError(`The gate could not decide this call, so it was not run: ${errorText(error)}`);
    }

    switch (request.status) {
      case 'approved':
        if (state !== undefined || request.decidedBy !== null) this.recordDecision(session, request, name);
        return this.run(route, name, args, request, session, ctx.mcpReq.signal);
      case 'denied':
      case 'expired': {
        this.recordDecision(session, request, name);
        const why = request.decisionReason ? `: ${request.decisionReason}` : '';
        const by = request.status === 'denied' ? ` by ${request.decidedBy ?? 'policy'}` : '';
        return toolError(`Vigil gate ${request.status} ${name}${by}${why} (request ${request.id}); the call was not run.`);
      }
      default: {
        const url = this.decisionUrl(request.id);
        if (!canElicitUrl) {
          return toolError(
            `${name} needs a human's approval: open ${url} (request ${request.id}). No decision within ${waitMs / 1000} s; the call was not run.`,
          );
        }
        const requestState = await this.codec.mint({ requestId: request.id, tool: name, argsDigest: argumentsDigest(args), nonce: randomUUID() });
        return inputRequired({
          inputRequests: { approval: inputRequired.elicitUrl({ message: `Vigil: approve or deny ${name} (request ${request.id})`, url }) },
          requestState,
        });
      }
    }
  }

  private async waitForDecision(request: ApprovalRequest, waitMs: number, signal: AbortSignal): Promise<ApprovalRequest> {
    if (request.status !== 'pending') return request;
    try {
      return await this.gate.waitForDecision(request.id, { timeoutMs: waitMs, pollIntervalMs: 250, maxPollIntervalMs: 1000, signal }, request);
    } catch (error) {
      if (error instanceof ApprovalTimeoutError) return this.gate.getRequest(request.id);
      throw error;
    }
  }

  private recordDecision(session: VigilSession | undefined, request: ApprovalRequest, action: string): void {
    const type = request.status === 'approved' ? 'approval_granted' : request.status === 'denied' ? 'approval_denied' : 'approval_expired';
    this.record(
      session,
      type,
      { requestId: request.id, action, decidedBy: request.decidedBy ?? 'system', ...(request.decisionReason !== null && { reason: request.decisionReason }) },
      request.status === 'approved' ? {} : { severity: 'warn' },
    );
  }

  /**
   * Runs an approved call once: its receipt must verify for exactly this tool and these arguments
   * and be redeemed on the gate first (a second redemption is refused) — at its creation already
   * when a policy approved it (redeemOutcome takes that redemption once), else now. Records the
   * call and tells the gate it ran.
   */
  private async run(
    route: Route,
    name: string,
    args: Record<string, unknown>,
    request: ApprovalRequest,
    session: VigilSession | undefined,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    try {
      // Without the session: its approval_redeemed event is recorded below, off the call's path.
      await redeemOutcome(this.gate, { ...request, approved: true }, name, args, undefined);
    } catch (error) {
      return toolError(`${(error as Error).message}.`);
    }
    if (request.context.recordedByAgent === true) this.record(session, 'custom', { type: 'approval_redeemed', data: { requestId: request.id, action: name } });
    const callId = randomUUID();
    const linked = { metadata: { approvalRequestId: request.id } };
    this.record(session, 'tool_call', { toolName: name, callId, arguments: args, serverName: route.upstream.name }, linked);
    const started = performance.now();
    let result: CallToolResult;
    try {
      result = await route.upstream.callTool(route.tool, args, signal);
    } catch (error) {
      const message = error instanceof UpstreamError ? error.message : `upstream call failed: ${(error as Error).message}`;
      this.record(session, 'tool_error', { toolName: name, callId, error: message, durationMs: performance.now() - started }, { ...linked, severity: 'error' });
      this.confirm(request.id, { ok: false, error: message });
      return toolError(message);
    }
    const durationMs = performance.now() - started;
    if (result.isError) {
      const text = result.content?.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n') ?? '';
      this.record(session, 'tool_error', { toolName: name, callId, error: text || 'the tool answered an error', durationMs }, { ...linked, severity: 'error' });
    } else {
      this.record(session, 'tool_response', { toolName: name, callId, result: result.structuredContent ?? result.content, durationMs }, linked);
    }
    this.confirm(request.id, { ok: !result.isError });
    return result;
  }

  /**
   * Records an event of the call in its observe session off the client's path: taken now (its
   * time, and its place in the session's order), handed to the session's queue once the current
   * work is done (setImmediate: the request to the upstream sent, or the answer to the client
   * written), so that neither the event's serialization nor a batch it completes delays the call.
   */
  private record(session: VigilSession | undefined, ...[type, payload, options]: Parameters<VigilSession['event']>): void {
    if (!session) return;
    const timestamp = new Date();
    setImmediate(() => {
      try {
        session.event(type, payload, { ...options, timestamp });
      } catch (error) {
        process.stderr.write(`vigil mcp-gateway: could not record ${type}: ${(error as Error).message}\n`);
      }
    });
  }

  /** Resolves once the records handed to setImmediate so far are in their session's queue. */
  private recorded(): Promise<void> {
    return new Promise((resolve) => setImmediate(resolve));
  }

  /**
   * Tells the gate the call ran, off the client's path: sent once the answer to the client is
   * written (setImmediate), never waited for by the call; close() waits for it.
   */
  private confirm(id: string, result: Record<string, unknown>): void {
    // The call has run: a failed confirmation must not turn its answer into an error.
    const sent = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.gate.confirm(id, result))
      .then(() => undefined)
      .catch((error: unknown) => void process.stderr.write(`vigil mcp-gateway: could not confirm request ${id}: ${errorText(error)}\n`))
      .finally(() => this.confirming.delete(sent));
    this.confirming.add(sent);
  }

  /** One MCP server instance (a connection, a 2025-era HTTP session, or one 2026-era request). */
  createServer(sessionKey?: string): McpServer {
    const server = new McpServer(
      { name: 'vigil-mcp-gateway', version: VIGIL_VERSION },
      {
        capabilities: { tools: {} },
        requestState: { verify: (state, ctx) => this.verifyState(state, ctx) },
        // Each round waits up to waitSeconds for the human; allow rounds until the request expires.
        inputRequired: { maxRounds: Math.ceil(this.config.approval.expiresInSeconds / this.config.approval.waitSeconds) + 2 },
      },
    );
    const low = server.server;
    const fixedKey = sessionKey;
    low.setRequestHandler('tools/list', async () => {
      try {
        return { tools: await this.listTools() };
      } catch (error) {
        throw new Error(errorText(error));
      }
    });
    low.setRequestHandler('tools/call', async (request, ctx) => {
      const client = low.getClientVersion();
      const capabilities = low.getClientCapabilities();
      const key = fixedKey ?? `client:${client?.name ?? 'unknown'}`;
      const canElicitUrl = capabilities?.elicitation?.url !== undefined;
      return this.callTool(request.params.name, (request.params.arguments ?? {}) as Record<string, unknown>, ctx, key, client, canElicitUrl);
    });
    return server;
  }

  async close(): Promise<void> {
    await Promise.all(this.confirming);
    await Promise.all([...this.sessions.keys()].map((key) => this.endSession(key)));
    await Promise.all([...this.upstreams.values()].map((upstream) => upstream.close()));
    await this.observe?.close({ timeoutMs: 5000 });
    this.http.close();
  }
}
