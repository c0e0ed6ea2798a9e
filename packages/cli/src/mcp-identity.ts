/**
 * Who the MCP server acts as on the gate. The gate derives `decidedBy` (and audit actors) from
 * the credential of a request, never from its body, and decisions made through an MCP tool must
 * read `mcp:<client name>`. So the MCP server does not decide with its API key directly: it
 * exchanges the key (VIGIL_GATE_API_KEY) for a short-lived MCP session token bound to the name
 * the MCP client gave in its `initialize` handshake:
 *
 *   POST /api/mcp/sessions  { name: "<client name>" }   (bearer: the API key)
 *   → 201 { token, actor: "mcp:<client name>", expiresAt, … }
 *
 * and sends the token on every gate call; requests made with it have the key's scopes and rate
 * limit and are attributed `mcp:<name>` — the dashboard sessions of auth/sessions.ts with another
 * namespace. The token is renewed before it expires and once on a 401.
 *
 * A gate without that route (404) is still usable: the server then falls back to the API key
 * (decisions read `api:<key name>`) and says so once on stderr. It never accepts an answer whose
 * actor is not `mcp:<name>`, so a decision is never attributed to a namespace it does not belong to.
 */
import { GateClient, VigilApiError, VigilAuthenticationError, VigilNotFoundError, type GateClientOptions } from '@vigil/sdk';

export const MCP_SESSIONS_PATH = '/api/mcp/sessions';
/** Renew a token this long before it expires. */
const RENEW_MARGIN_MS = 60_000;

/** The gate's session names: letters, digits, spaces and . ' _ @ - ; starting with a letter or digit; ≤ 100. */
export function sessionName(clientName: string | undefined): string {
  const cleaned = (clientName ?? '')
    .normalize('NFC')
    .replace(/[^\p{L}\p{N} .'_@-]+/gu, '-')
    .replace(/^[^\p{L}\p{N}]+/u, '')
    .trim()
    .slice(0, 100)
    .trim();
  return cleaned === '' ? 'unknown-client' : cleaned;
}

interface McpSession {
  token: string;
  actor: string;
  expiresAt: string;
}

export type ActingCredential = { kind: 'mcp_session'; actor: string } | { kind: 'api_key'; reason: string };

export class GateIdentity {
  private acting: { client: GateClient; expiresAt: number; credential: ActingCredential } | null = null;
  private pending: Promise<void> | null = null;
  private warned = false;

  constructor(
    private readonly options: GateClientOptions & { baseUrl: string },
    private readonly clientName: () => string | undefined,
    private readonly warn: (message: string) => void = (message) => process.stderr.write(`vigil mcp: ${message}\n`),
  ) {}

  /** What the gate calls are attributed to (after the first call). */
  get credential(): ActingCredential | null {
    return this.acting?.credential ?? null;
  }

  /** Runs `use` with the acting gate client; a 401 on an MCP session token renews the session and retries once. */
  async run<T>(use: (gate: GateClient) => Promise<T>): Promise<T> {
    const client = await this.client();
    try {
      return await use(client);
    } catch (error) {
      if (error instanceof VigilAuthenticationError && this.acting?.credential.kind === 'mcp_session') {
        this.acting = null;
        return use(await this.client());
      }
      throw error;
    }
  }

  private async client(): Promise<GateClient> {
    if (this.acting && Date.now() < this.acting.expiresAt - RENEW_MARGIN_MS) return this.acting.client;
    this.pending ??= this.signIn().finally(() => (this.pending = null));
    await this.pending;
    return this.acting!.client;
  }

  private async signIn(): Promise<void> {
    const name = sessionName(this.clientName());
    const keyClient = new GateClient(this.options);
    let session: McpSession;
    try {
      // The route is not in the generated gate types until the gate serves it, hence the cast.
      const call = keyClient.call.bind(keyClient) as unknown as (method: 'post', path: string, init: { body: unknown }) => Promise<McpSession>;
      session = await call('post', MCP_SESSIONS_PATH, { body: { name } });
    } catch (error) {
      if (error instanceof VigilNotFoundError && error.code !== undefined && /route/i.test(error.message)) {
        this.fallBack(keyClient, `the gate has no ${MCP_SESSIONS_PATH} route, so decisions are attributed to the API key (api:<key name>), not mcp:${name}`);
        return;
      }
      if (error instanceof VigilApiError && error.status === 400) {
        this.fallBack(keyClient, `the gate refused the MCP session name "${name}" (${error.message}); decisions are attributed to the API key`);
        return;
      }
      throw error;
    }
    const expected = `mcp:${name}`;
    if (session.actor !== expected || typeof session.token !== 'string') {
      this.fallBack(keyClient, `the gate answered the MCP sign-in with actor "${session.actor}" instead of "${expected}"; using the API key`);
      return;
    }
    const expiresAt = Date.parse(session.expiresAt);
    this.acting = {
      client: new GateClient({ ...this.options, apiKey: session.token }),
      expiresAt: Number.isNaN(expiresAt) ? Date.now() + 3_600_000 : expiresAt,
      credential: { kind: 'mcp_session', actor: session.actor },
    };
  }

  private fallBack(keyClient: GateClient, reason: string): void {
    if (!this.warned) {
      this.warned = true;
      this.warn(reason);
    }
    // Try again in ten minutes (the gate may be upgraded meanwhile).
    this.acting = { client: keyClient, expiresAt: Date.now() + 10 * 60_000 + RENEW_MARGIN_MS, credential: { kind: 'api_key', reason } };
  }
}
