/**
 * Claude Code run offline, for the adapters' end-to-end tests: a local fake of Anthropic's
 * Messages API (the first turn of each conversation streams one `tool_use`, the turn after its
 * tool_result answers `end_turn`), and `claude -p … --output-format json` (the native binary of
 * @anthropic-ai/claude-code-linux-x64) in a temporary project with an isolated HOME.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { TestHttpServer } from '@vigil/platform/testing';

/** The Claude Code executable (the Agent SDK's pathToClaudeCodeExecutable too). */
export const CLAUDE_BINARY = join(dirname(createRequire(import.meta.url).resolve('@anthropic-ai/claude-code-linux-x64/package.json')), 'claude');

interface ContentBlock {
  type: string;
  content?: unknown;
  is_error?: boolean;
  tool_use_id?: string;
}

export interface ToolResult {
  toolUseId: string;
  content: string;
  isError: boolean;
}

function sse(res: ServerResponse, events: Array<[string, Record<string, unknown>]>): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const [type, data] of events) res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  res.end();
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return Array.isArray(content) ? content.map((part: { text?: string }) => part.text ?? '').join('') : '';
}

/** The fake Messages API: each conversation's model asks for `tool` with `input` once, then ends its turn. */
export class FakeAnthropic {
  /** The tool_result blocks Claude sent back, in order: what each tool call came to. */
  readonly toolResults: ToolResult[] = [];
  private readonly server: TestHttpServer;
  private turns = 0;

  constructor(
    public tool: string,
    public input: Record<string, unknown>,
  ) {
    this.server = new TestHttpServer((request, res) => this.answer(request.url, request.body, res));
  }

  get url(): string {
    return this.server.url;
  }

  async start(): Promise<this> {
    await this.server.start();
    return this;
  }

  stop(): Promise<void> {
    return this.server.stop();
  }

  private answer(url: string, body: string, res: ServerResponse): void {
    if (!url.startsWith('/v1/messages')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"type":"error","error":{"type":"not_found_error","message":"not here"}}');
      return;
    }
    const request = JSON.parse(body) as { model: string; stream?: boolean; messages: Array<{ content: unknown }>; tools?: Array<{ name: string }> };
    if (url.startsWith('/v1/messages/count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"input_tokens":10}');
      return;
    }
    const last = request.messages.at(-1)?.content;
    const results = Array.isArray(last) ? (last as ContentBlock[]).filter((block) => block.type === 'tool_result') : [];
    for (const block of results)
      this.toolResults.push({ toolUseId: block.tool_use_id ?? '', content: textOf(block.content), isError: block.is_error === true });
    this.turns += 1;
    const usage = { input_tokens: 10, output_tokens: 5 };
    const message = {
      id: `msg_${this.turns}`,
      type: 'message',
      role: 'assistant',
      model: request.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage,
    };
    if (request.stream !== true) {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ ...message, content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn' }));
      return;
    }
    const callsTool = results.length === 0 && request.tools?.some((tool) => tool.name === this.tool) === true;
    const block = callsTool
      ? {
          content_block: { type: 'tool_use', id: `toolu_${this.turns}`, name: this.tool, input: {} },
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(this.input) },
        }
      : { content_block: { type: 'text', text: '' }, delta: { type: 'text_delta', text: 'done' } };
    sse(res, [
      ['message_start', { message }],
      ['content_block_start', { index: 0, content_block: block.content_block }],
      ['content_block_delta', { index: 0, delta: block.delta }],
      ['content_block_stop', { index: 0 }],
      ['message_delta', { delta: { stop_reason: callsTool ? 'tool_use' : 'end_turn', stop_sequence: null }, usage }],
      ['message_stop', {}],
    ]);
  }
}

/** A temporary project (with `.claude/settings.json` when given) and a HOME of its own. */
export class ClaudeProject {
  readonly root = mkdtempSync(join(tmpdir(), 'vigil-claude-'));
  readonly dir = join(this.root, 'project');
  readonly home = join(this.root, 'home');

  constructor(settings?: object, files: Record<string, string> = {}) {
    mkdirSync(join(this.dir, '.claude'), { recursive: true });
    mkdirSync(this.home);
    if (settings !== undefined) writeFileSync(join(this.dir, '.claude', 'settings.json'), JSON.stringify(settings, null, 2));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(this.dir, name), text);
  }

  /** The environment Claude Code runs offline in: the fake API, a test key, this HOME, no other traffic. */
  env(anthropicUrl: string, extra: Record<string, string> = {}): Record<string, string> {
    return {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: this.home,
      ANTHROPIC_BASE_URL: anthropicUrl,
      ANTHROPIC_API_KEY: 'test',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      ...extra,
    };
  }

  remove(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** What `claude -p --output-format json` printed. */
export interface ClaudeResult {
  is_error: boolean;
  result?: string;
  session_id: string;
  terminal_reason?: string;
  permission_denials: Array<{ tool_name: string; tool_use_id: string; tool_input: Record<string, unknown> }>;
  deferred_tool_use?: { id: string; name: string; input: Record<string, unknown> };
}

/** Runs `claude -p <prompt> --output-format json [args]` in the project; answers its JSON result. */
export async function runClaude(project: ClaudeProject, env: Record<string, string>, prompt: string, args: string[] = []): Promise<ClaudeResult> {
  const child = spawn(CLAUDE_BINARY, ['-p', prompt, '--output-format', 'json', ...args], { cwd: project.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((done) => child.once('exit', done));
  try {
    return JSON.parse(stdout) as ClaudeResult;
  } catch {
    throw new Error(`claude exited ${code} without a JSON result\nstdout: ${stdout}\nstderr: ${stderr}`);
  }
}
