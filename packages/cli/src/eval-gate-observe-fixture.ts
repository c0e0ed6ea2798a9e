/**
 * Test fixture of the eval-gate suites: the real observe app listening on an ephemeral local port
 * over a fresh SQLite file, a first API key created over HTTP, and helpers that go through its
 * public HTTP API only (ingest, evaluators, timelines), except `tamperEvent`, which edits a stored
 * row as someone with access to the database would.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildObserveService, observeConfigFromEnvironment, type ObserveService } from '@vigil/observe';

export interface ApiAnswer {
  status: number;
  json: any;
}

export class ObserveFixture {
  key = '';
  // Recent past, a minute apart: the session list's "newest first" follows these start times.
  private clock = Date.now() - 24 * 60 * 60 * 1000;

  private constructor(
    readonly base: string,
    private readonly service: ObserveService,
    private readonly closeService: () => Promise<void>,
  ) {}

  /** `env` is observe's configuration environment (e.g. LLM_* for the judge); nothing is read from process.env. */
  static async start(env: Record<string, string> = {}): Promise<ObserveFixture> {
    const dataDir = mkdtempSync(join(tmpdir(), 'vigil-eval-gate-'));
    const config = observeConfigFromEnvironment({ LOG_LEVEL: 'silent', ...env }, { dataDir, port: 0 });
    assert.equal(config.database.kind, 'sqlite');
    // Background timers off; a dataset run still starts working as soon as it is created.
    const service = await buildObserveService(config, { runJobs: false });
    await service.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = service.app.server.address() as AddressInfo;
    const fixture = new ObserveFixture(`http://127.0.0.1:${port}`, service, async () => {
      await service.app.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const created = await fixture.api('POST', '/api/keys', { name: 'eval-gate-test' }, '');
    assert.equal(created.status, 201, JSON.stringify(created.json));
    fixture.key = created.json.key;
    return fixture;
  }

  close(): Promise<void> {
    return this.closeService();
  }

  /** Environment of a CLI run against this server. */
  cliEnv(): Record<string, string> {
    return { VIGIL_URL: this.base, VIGIL_API_KEY: this.key };
  }

  async api(method: string, path: string, body?: unknown, key = this.key): Promise<ApiAnswer> {
    const response = await fetch(`${this.base}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, json: text ? JSON.parse(text) : undefined };
  }

  /** One finished session of `agentId` that called `tools`, started a minute after the previous one. */
  async ingestSession(sessionId: string, agentId: string, tools: string[]): Promise<void> {
    this.clock += 60_000;
    const start = this.clock;
    const at = (offset: number): string => new Date(start + offset).toISOString();
    const events = [
      { sessionId, agentId, eventType: 'session_started', timestamp: at(0), payload: { agentName: agentId } },
      ...tools.map((toolName, i) => ({
        sessionId,
        agentId,
        eventType: 'tool_call',
        timestamp: at(1000 + i),
        payload: { toolName, callId: `c${i}`, arguments: {} },
      })),
      { sessionId, agentId, eventType: 'session_ended', timestamp: at(5000), payload: { reason: 'completed' } },
    ];
    const response = await this.api('POST', '/api/events', { events });
    assert.equal(response.status, 201, JSON.stringify(response.json));
  }

  /** Edits the stored payload of the session's event at `seq` directly in the database: its chain no longer verifies. */
  async tamperEvent(sessionId: string, seq: number): Promise<string> {
    const { db } = this.service.context.database;
    const row = await db.selectFrom('events').select(['id', 'payload']).where('session_id', '=', sessionId).where('seq', '=', seq).executeTakeFirstOrThrow();
    await db
      .updateTable('events')
      .set({ payload: JSON.stringify({ ...JSON.parse(row.payload), tampered: true }) })
      .where('id', '=', row.id)
      .execute();
    return row.id;
  }

  /** A compliance evaluator that fails any session calling a `delete_*` tool. */
  async createNoDeleteEvaluator(): Promise<string> {
    const created = await this.api('POST', '/api/evaluators', {
      name: 'no destructive tools',
      kind: 'compliance',
      rules: [{ id: 'no-delete', type: 'tool_denylist', tools: ['delete_*'] }],
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    return created.json.id;
  }

  /** The eval_result events chained on a session (and the chain is still valid). */
  async evalEvents(sessionId: string): Promise<Array<{ eventType: string; payload: Record<string, unknown> }>> {
    const timeline = await this.api('GET', `/api/sessions/${encodeURIComponent(sessionId)}/timeline`);
    assert.equal(timeline.status, 200, JSON.stringify(timeline.json));
    assert.equal(timeline.json.chainValid, true);
    return (timeline.json.events as Array<{ eventType: string; payload: Record<string, unknown> }>).filter((e) => e.eventType === 'eval_result');
  }
}
