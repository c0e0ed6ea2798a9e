/**
 * What the dashboard's browser tests share: real observe and gate servers on ephemeral ports with
 * fresh SQLite files (observe reaching the gate through GATE_URL, as `npm start` does), seed data,
 * Debian's Chromium driven by playwright-core, and the console watcher that fails a test on any
 * console error or page error. The built app is the one `npm start` serves (`npm test` builds it
 * first; built here when missing or stale).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { sendJson, TestHttpServer } from '@vigil/platform/testing';
import { buildGateService, gateConfigFromEnvironment, type GateService } from '@vigil/gate';
import { buildObserveService, observeConfigFromEnvironment, type ObserveService } from '@vigil/observe';
import axe from 'axe-core';
import { chromium, type Browser, type Page } from 'playwright-core';
import { DASHBOARD_DIR, ensureDashboardBuilt } from './dashboard-build.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const ADMIN_KEY = 'gk_dashboard_test_admin_key_0123456789';
/** VIGIL_SCREENSHOTS=1: the tests also save the main pages under docs/screenshots/ (shown in the README and docs/guide/dashboard.md). */
const SCREENSHOTS = process.env.VIGIL_SCREENSHOTS === '1' ? resolve(import.meta.dirname, '../../../docs/screenshots') : null;
export const WAIT_MS = 20_000;
/** The two widths every page is checked at: a phone's and a desktop's. */
export const PHONE = { width: 390, height: 844 };
export const DESKTOP = { width: 1400, height: 900 };
const HOUR = 3_600_000;

/**
 * Like PostgreSQL in the other suites: the browser suites are skipped where Chromium is missing,
 * and that is a failure in CI (REQUIRE_SERVICES=1). Returns the `skip` option for the suite.
 */
export function chromiumSkip(): string | false {
  if (existsSync(CHROMIUM)) return false;
  if (process.env.REQUIRE_SERVICES === '1') {
    test('Chromium is installed for the browser tests', () =>
      assert.fail(`REQUIRE_SERVICES=1 but there is no Chromium at ${CHROMIUM} (apt-get install chromium)`));
  }
  return `no Chromium at ${CHROMIUM} (apt-get install chromium)`;
}

export interface Stack {
  observe: ObserveService;
  gate: GateService;
  observeUrl: string;
  gateUrl: string;
  /** The first observe key (empty when the stack was started without one). */
  observeKey: string;
  browser: Browser;
  page: Page;
  /** Console errors and page errors seen since the last `noProblems()`. */
  problems: string[];
  /** Asserts the browser logged no error since the last call. */
  noProblems(): void;
  close(): Promise<void>;
}

/** `gateEnv`: more variables for the gate alone (chat platforms pointed at local fakes). */
export async function startStack(
  options: { gateEnv?: Record<string, string>; observeEnv?: Record<string, string>; firstObserveKey?: boolean } = {},
): Promise<Stack> {
  const build = await ensureDashboardBuilt();
  assert.ok(build.result === 'fresh' || build.result === 'built', `the dashboard could not be built: ${'reason' in build ? build.reason : ''}`);
  assert.ok(existsSync(join(DASHBOARD_DIR, 'dist', 'index.html')));

  const dir = mkdtempSync(join(tmpdir(), 'vigil-dashboard-e2e-'));
  const env = { LOG_LEVEL: 'silent', HOST: '127.0.0.1', GATE_ADMIN_KEY: ADMIN_KEY, DATABASE_URL: '' };
  const gate = await buildGateService(gateConfigFromEnvironment({ ...env, ...options.gateEnv }, { dataDir: dir, port: 0 }), { runJobs: false });
  const gateUrl = await gate.app.listen({ host: '127.0.0.1', port: 0 });
  const observe = await buildObserveService(observeConfigFromEnvironment({ ...env, GATE_URL: gateUrl, ...options.observeEnv }, { dataDir: dir, port: 0 }), {
    runJobs: false,
    kickEmbeddings: true,
  });
  const observeUrl = await observe.app.listen({ host: '127.0.0.1', port: 0 });
  let observeKey = '';
  if (options.firstObserveKey ?? true) {
    const first = await fetch(`${observeUrl}/api/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'admin' }),
    });
    assert.equal(first.status, 201);
    observeKey = ((await first.json()) as { key: string }).key;
  }

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, baseURL: observeUrl });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()} (${message.location().url})`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));

  return {
    observe,
    gate,
    observeUrl,
    gateUrl,
    observeKey,
    browser,
    page,
    problems,
    noProblems: () => assert.deepEqual(problems.splice(0), [], 'no console errors and no page errors'),
    async close() {
      await browser.close();
      await observe.app.close();
      await gate.app.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function api<T>(base: string, key: string, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

const iso = (msAgo: number): string => new Date(Date.now() - msAgo).toISOString();

export type EventInput = { sessionId: string; agentId: string; eventType: string; payload: Record<string, unknown>; timestamp?: string };

/** A realistic session: start, an LLM round trip, a tool call (optionally failing), the end. */
export function session(
  id: string,
  agentId: string,
  agentName: string,
  startMsAgo: number,
  options: { tags?: string[]; fail?: boolean; cost?: number; tool?: string } = {},
): EventInput[] {
  const at = (offset: number) => iso(startMsAgo - offset);
  const tool = options.tool ?? 'web_search';
  const base = { sessionId: id, agentId };
  return [
    { ...base, eventType: 'session_started', timestamp: at(0), payload: { agentName, tags: options.tags ?? ['prod'] } },
    {
      ...base,
      eventType: 'llm_call',
      timestamp: at(200),
      payload: {
        callId: `${id}-l1`,
        provider: 'openai',
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: `Find the refund policy for order ${id}` }],
      },
    },
    {
      ...base,
      eventType: 'llm_response',
      timestamp: at(1100),
      payload: {
        callId: `${id}-l1`,
        provider: 'openai',
        model: 'gpt-4o-mini',
        completion: `I will search for the refund policy of ${id}.`,
        finishReason: 'tool_calls',
        usage: { inputTokens: 900, outputTokens: 120 },
        costUsd: options.cost ?? 0.0021,
        latencyMs: 900,
      },
    },
    { ...base, eventType: 'tool_call', timestamp: at(1200), payload: { toolName: tool, callId: `${id}-t1`, arguments: { q: `refund policy ${id}` } } },
    options.fail
      ? {
          ...base,
          eventType: 'tool_error',
          timestamp: at(2400),
          payload: { toolName: tool, callId: `${id}-t1`, error: 'upstream timed out', errorCode: 'ETIMEDOUT', durationMs: 1200 },
        }
      : { ...base, eventType: 'tool_response', timestamp: at(1650), payload: { toolName: tool, callId: `${id}-t1`, result: { hits: 12 }, durationMs: 450 } },
    { ...base, eventType: 'session_ended', timestamp: at(2600), payload: { reason: options.fail ? 'error' : 'completed', summary: 'answered the customer' } },
  ];
}

/** Sessions of three agents over the last 20 hours, an alert rule, a guardrail, a running benchmark and an evaluator. */
export async function seedObserve(stack: Stack): Promise<void> {
  const events: EventInput[] = [];
  const agents = [
    ['researcher', 'Research assistant', 'web_search'],
    ['support-bot', 'Support bot', 'crm_lookup'],
    ['billing-agent', 'Billing agent', 'stripe_charge'],
  ] as const;
  let n = 0;
  for (let hour = 20; hour >= 1; hour -= 1) {
    for (const [agentId, name, tool] of agents) {
      n += 1;
      // prompt-v2 fails less and spends less than prompt-v1: the benchmark has something to find.
      const v2 = n % 2 === 1;
      const fail = v2 ? n % 9 === 0 : n % 3 === 0 || (agentId === 'support-bot' && hour < 4);
      events.push(
        ...session(`${agentId}-${n}`, agentId, name, hour * HOUR + n * 60_000, {
          tags: ['prod', v2 ? 'prompt-v2' : 'prompt-v1'],
          fail,
          cost: (v2 ? 0.0008 : 0.0021) * (1 + (n % 5) / 4),
          tool,
        }),
      );
    }
  }
  const { observeUrl: url, observeKey: key } = stack;
  await api(url, key, 'POST', '/api/events', { events });
  await api(url, key, 'POST', '/api/alerts/rules', {
    name: 'Support errors above 20%',
    condition: 'error_rate_exceeds',
    threshold: 0.2,
    windowMinutes: 60,
    scope: { agentId: 'support-bot' },
  });
  await api(url, key, 'POST', '/api/guardrails', {
    name: 'Pause on runaway spend',
    conditionType: 'cost_limit',
    conditionConfig: { maxCostUsd: 5, periodMs: 86_400_000 },
    actionType: 'pause_agent',
    actionConfig: { reason: 'daily budget exceeded' },
    dryRun: true,
  });
  const bench = await api<{ id: string }>(url, key, 'POST', '/api/benchmarks', {
    name: 'Prompt v1 vs v2',
    variants: [
      { name: 'v1', tag: 'prompt-v1' },
      { name: 'v2', tag: 'prompt-v2' },
    ],
    minSessionsPerVariant: 10,
  });
  await api(url, key, 'PUT', `/api/benchmarks/${bench.id}/status`, { status: 'running' });
  await api(url, key, 'POST', '/api/evaluators', {
    name: 'No payments without approval',
    kind: 'compliance',
    rules: [{ id: 'no-charge', type: 'tool_denylist', tools: ['stripe_*'] }],
  });
}

/** The payments policy of docs/guide/curl.md, a webhook that cannot be reached (so deliveries show failures) and an agent key. */
export async function seedGate(stack: Stack): Promise<{ agentKey: string }> {
  await api(stack.gateUrl, ADMIN_KEY, 'POST', '/api/policies', {
    name: 'payments',
    priority: 10,
    rules: [
      { match: { action: { $regex: '^delete_' } }, decision: 'auto_deny' },
      { match: { action: 'pay', amount: { $lt: 100 } }, decision: 'auto_approve' },
      { match: { action: 'pay' }, decision: 'route_to_human', requireReason: true, approvers: ['finance'] },
    ],
  });
  await api(stack.gateUrl, ADMIN_KEY, 'POST', '/api/webhooks', { url: 'http://127.0.0.1:9/gate-events', events: ['request.created', 'request.decided'] });
  const agentKey = (
    await api<{ key: string }>(stack.gateUrl, ADMIN_KEY, 'POST', '/api/api-keys', { name: 'billing-agent', scopes: ['request:create', 'request:read'] })
  ).key;
  return { agentKey };
}

/**
 * A real agent behind a dataset run's webhook: for each case it logs a session in observe
 * (`eval-<runId>-<caseId>`: shell_exec for task "shell", else lookup, answering `input.answer`),
 * then answers {sessionId, output}. `stack()` is read per call, as the stack starts after it.
 */
export function evalAgent(stack: () => Stack): TestHttpServer {
  return new TestHttpServer((request, res) => {
    const { runId, caseId, agentId, input } = JSON.parse(request.body) as {
      runId: string;
      caseId: string;
      agentId: string;
      input: { task: string; answer: string };
    };
    const sessionId = `eval-${runId}-${caseId}`;
    const tool = input.task === 'shell' ? 'shell_exec' : 'lookup';
    const events: EventInput[] = [
      { sessionId, agentId, eventType: 'session_started', payload: { agentName: 'Eval agent' } },
      { sessionId, agentId, eventType: 'tool_call', payload: { toolName: tool, callId: 'c1', arguments: input } },
      { sessionId, agentId, eventType: 'tool_response', payload: { toolName: tool, callId: 'c1', result: input.answer, durationMs: 5 } },
      { sessionId, agentId, eventType: 'session_ended', payload: { reason: 'completed' } },
    ];
    api(stack().observeUrl, stack().observeKey, 'POST', '/api/events', { events }).then(
      () => sendJson(res, 200, { sessionId, output: input.answer }),
      (error: unknown) => sendJson(res, 500, { error: String(error) }),
    );
  });
}

/** Signs in through the form, with the keys given (the name is Ada). */
export async function signIn(stack: Stack, keys: { observe?: string; gate?: string }): Promise<void> {
  const { page } = stack;
  await page.goto('/');
  await page.getByRole('heading', { name: 'Sign in to Vigil' }).waitFor();
  await page.getByLabel('Your name').fill('Ada');
  if (keys.observe) await page.getByLabel('Observe API key').fill(keys.observe);
  if (keys.gate) await page.getByLabel('Gate API key').fill(keys.gate);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** Waits until nothing on the page is loading (spinners, lazily loaded charts). */
export async function settled(page: Page): Promise<void> {
  await page.waitForFunction(() => !document.querySelector('.loading, .chart-loading'));
}

export async function shot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await settled(page);
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
}

export const nav = (page: Page) => page.getByRole('navigation', { name: 'Main' });

/** axe-core's serious and critical violations on the page as it is now, as readable lines. */
export async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the dashboard's CSP (script-src 'self') refuses inline scripts.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axe.source);
  const violations = await page.evaluate(async () => {
    const runner = (window as unknown as { axe: { run: (context: Document, options: object) => Promise<{ violations: AxeViolation[] }> } }).axe;
    type AxeViolation = { id: string; impact: string | null; help: string; nodes: { target: string[]; failureSummary?: string }[] };
    const result = await runner.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map(
        (v) =>
          `${v.id} (${v.impact}): ${v.help} — ${v.nodes
            .slice(0, 3)
            .map((n) => n.target.join(' '))
            .join(', ')}`,
      );
  });
  return violations;
}
