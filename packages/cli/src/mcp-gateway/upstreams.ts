/**
 * The gateway's connections to its upstream MCP servers (through the official MCP client). A
 * connection is opened when first needed and opened again after the server exited or the link
 * broke (a restart); every request carries a timeout, so a hung or crashed upstream answers an
 * error instead of holding the gateway's client.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { UpstreamConfig } from './config.ts';

/** A failure of an upstream (unreachable, crashed, timed out): the gateway answers it as a tool error. */
export class UpstreamError extends Error {}

export interface UpstreamTimeouts {
  connectMs: number;
  callMs: number;
}

export class Upstream {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private tools: Tool[] | undefined;
  private stderrTail = '';
  private stdio: StdioClientTransport | undefined;

  constructor(
    readonly name: string,
    private readonly config: UpstreamConfig,
    private readonly timeouts: UpstreamTimeouts,
    private readonly clientInfo: { name: string; version: string },
  ) {}

  private transport(): Transport {
    if ('url' in this.config) {
      return new StreamableHTTPClientTransport(new URL(this.config.url), { requestInit: { headers: this.config.headers } });
    }
    const transport = (this.stdio = new StdioClientTransport({
      command: this.config.command,
      args: this.config.args,
      cwd: this.config.cwd,
      env: { ...(process.env as Record<string, string>), ...this.config.env },
      stderr: 'pipe',
    }));
    // The last lines the server wrote, to say why it failed.
    transport.stderr?.on('data', (chunk: Buffer) => (this.stderrTail = (this.stderrTail + chunk.toString()).slice(-2000)));
    return transport;
  }

  private async connect(): Promise<Client> {
    if (this.client) return this.client;
    this.connecting ??= (async () => {
      const client = new Client(this.clientInfo);
      client.onclose = () => {
        // The server exited or the link broke: the next call starts it again.
        if (this.client === client) this.client = undefined;
      };
      try {
        await client.connect(this.transport(), { timeout: this.timeouts.connectMs });
      } catch (error) {
        await client.close().catch(() => undefined);
        throw new UpstreamError(`upstream MCP server "${this.name}" could not be started or reached: ${(error as Error).message}${this.tail()}`);
      }
      this.client = client;
      return client;
    })().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private tail(): string {
    const text = this.stderrTail.trim();
    return text ? ` (its stderr: ${text.split('\n').slice(-3).join(' | ')})` : '';
  }

  /** The process id of a running stdio upstream (for diagnostics). */
  get pid(): number | undefined {
    return this.client ? (this.stdio?.pid ?? undefined) : undefined;
  }

  /** The upstream's tools (listed once per connection). */
  async listTools(): Promise<Tool[]> {
    const client = await this.connect();
    if (this.tools && this.client === client) return this.tools;
    const tools: Tool[] = [];
    let cursor: string | undefined;
    try {
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.timeouts.connectMs });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
    } catch (error) {
      throw new UpstreamError(`upstream MCP server "${this.name}" did not list its tools: ${(error as Error).message}`);
    }
    this.tools = tools;
    return tools;
  }

  async callTool(tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<CallToolResult> {
    const client = await this.connect();
    try {
      return (await client.callTool({ name: tool, arguments: args }, undefined, { timeout: this.timeouts.callMs, signal })) as CallToolResult;
    } catch (error) {
      const message = (error as Error).message;
      if (/timed out|timeout/i.test(message)) {
        throw new UpstreamError(`upstream MCP server "${this.name}" did not answer ${tool} within ${this.timeouts.callMs / 1000} s`);
      }
      throw new UpstreamError(`upstream MCP server "${this.name}" failed during ${tool}: ${message}${this.tail()}`);
    }
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => undefined);
  }
}
