/**
 * The dashboard in a real browser (Debian's /usr/bin/chromium driven by playwright-core) against
 * real observe and gate servers on ephemeral ports with fresh SQLite files. The built app is the
 * one `npm start` serves (built here first when missing or stale).
 *
 * VIGIL_SCREENSHOTS=1 also saves the main pages under docs/screenshots/ (shown in the README).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildGateService, type GateService } from '@vigil/gate';
import { buildObserveService, type ObserveService } from '@vigil/observe';
import { gateConfigFromEnvironment, observeConfigFromEnvironment } from '@vigil/platform';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { DASHBOARD_DIR, ensureDashboardBuilt } from './dashboard-build.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
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
const ADMIN_KEY = 'gk_dashboard_test_admin_key_0123456789';
const SCREENSHOTS = process.env.VIGIL_SCREENSHOTS === '1' ? resolve(import.meta.dirname, '../../../docs/screenshots') : null;
const WAIT = 20_000;

const HOUR = 3_600_000;
const iso = (msAgo: number): string => new Date(Date.now() - msAgo).toISOString();

interface Stack {
  observe: ObserveService;
  gate: GateService;
  observeUrl: string;
  gateUrl: string;
  observeKey: string;
  dir: string;
}

async function startStack(): Promise<Stack> {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-dashboard-e2e-'));
  const env = { LOG_LEVEL: 'silent', HOST: '127.0.0.1', GATE_ADMIN_KEY: ADMIN_KEY, DATABASE_URL: '' };
  const gate = await buildGateService(gateConfigFromEnvironment(env, { dataDir: dir, port: 0 }), { runJobs: false });
  const gateUrl = await gate.app.listen({ host: '127.0.0.1', port: 0 });
  const observe = await buildObserveService(observeConfigFromEnvironment({ ...env, GATE_URL: gateUrl }, { dataDir: dir, port: 0 }), {
    runJobs: false,
    kickEmbeddings: true,
  });
  const observeUrl = await observe.app.listen({ host: '127.0.0.1', port: 0 });
  const first = await fetch(`${observeUrl}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'admin' }) });
  assert.equal(first.status, 201);
  const observeKey = ((await first.json()) as { key: string }).key;
  return { observe, gate, observeUrl, gateUrl, observeKey, dir };
}

async function api<T>(base: string, key: string, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

type EventInput = { sessionId: string; agentId: string; eventType: string; payload: Record<string, unknown>; timestamp?: string; severity?: string };

/** A realistic session: start, an LLM round trip, a tool call (optionally failing), the end. */
function session(id: string, agentId: string, agentName: string, startMsAgo: number, options: { tags?: string[]; fail?: boolean; cost?: number; tool?: string } = {}): EventInput[] {
  const at = (offset: number) => iso(startMsAgo - offset);
  const tool = options.tool ?? 'web_search';
  return [
    { sessionId: id, agentId, eventType: 'session_started', timestamp: at(0), payload: { agentName, tags: options.tags ?? ['prod'] } },
    {
      sessionId: id,
      agentId,
      eventType: 'llm_call',
      timestamp: at(200),
      payload: { callId: `${id}-l1`, provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Find the refund policy for order ${id}` }] },
    },
    {
      sessionId: id,
      agentId,
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
    { sessionId: id, agentId, eventType: 'tool_call', timestamp: at(1200), payload: { toolName: tool, callId: `${id}-t1`, arguments: { q: `refund policy ${id}` } } },
    options.fail
      ? { sessionId: id, agentId, eventType: 'tool_error', timestamp: at(2400), payload: { toolName: tool, callId: `${id}-t1`, error: 'upstream timed out', errorCode: 'ETIMEDOUT', durationMs: 1200 } }
      : { sessionId: id, agentId, eventType: 'tool_response', timestamp: at(1650), payload: { toolName: tool, callId: `${id}-t1`, result: { hits: 12 }, durationMs: 450 } },
    { sessionId: id, agentId, eventType: 'session_ended', timestamp: at(2600), payload: { reason: options.fail ? 'error' : 'completed', summary: 'answered the customer' } },
  ];
}

/** Background data so every page has something to show (and the screenshots look like a real install). */
async function seed(stack: Stack): Promise<void> {
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
      events.push(...session(`${agentId}-${n}`, agentId, name, hour * HOUR + n * 60_000, { tags: ['prod', v2 ? 'prompt-v2' : 'prompt-v1'], fail, cost: (v2 ? 0.0008 : 0.0021) * (1 + (n % 5) / 4), tool }));
    }
  }
  await api(stack.observeUrl, stack.observeKey, 'POST', '/api/events', { events });
  await api(stack.observeUrl, stack.observeKey, 'POST', '/api/alerts/rules', { name: 'Support errors above 20%', condition: 'error_rate_exceeds', threshold: 0.2, windowMinutes: 60, scope: { agentId: 'support-bot' } });
  await api(stack.observeUrl, stack.observeKey, 'POST', '/api/guardrails', {
    name: 'Pause on runaway spend',
    conditionType: 'cost_limit',
    conditionConfig: { maxCostUsd: 5, periodMs: 86_400_000 },
    actionType: 'pause_agent',
    actionConfig: { reason: 'daily budget exceeded' },
    dryRun: true,
  });
  const bench = await api<{ id: string }>(stack.observeUrl, stack.observeKey, 'POST', '/api/benchmarks', {
    name: 'Prompt v1 vs v2',
    variants: [
      { name: 'v1', tag: 'prompt-v1' },
      { name: 'v2', tag: 'prompt-v2' },
    ],
    minSessionsPerVariant: 10,
  });
  await api(stack.observeUrl, stack.observeKey, 'PUT', `/api/benchmarks/${bench.id}/status`, { status: 'running' });
  await api(stack.observeUrl, stack.observeKey, 'POST', '/api/evaluators', {
    name: 'No payments without approval',
    kind: 'compliance',
    rules: [{ id: 'no-charge', type: 'tool_denylist', tools: ['stripe_*'] }],
  });
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
}

/** Fails the test on any console error or uncaught page error. */
function watchConsole(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()} (${message.location().url})`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return problems;
}

async function shot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.waitForLoadState('networkidle').catch(() => undefined);
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: false });
}

// Like PostgreSQL in the other suites: skipped where Chromium is missing, a failure in CI (REQUIRE_SERVICES=1).
const chromiumMissing = !existsSync(CHROMIUM);
if (chromiumMissing && process.env.REQUIRE_SERVICES === '1') {
  test('Chromium is installed for the browser tests', () => assert.fail(`REQUIRE_SERVICES=1 but there is no Chromium at ${CHROMIUM} (apt-get install chromium)`));
}

describe('dashboard in a real browser', { skip: chromiumMissing ? `no Chromium at ${CHROMIUM} (apt-get install chromium)` : false }, () => {
  let stack: Stack;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: string[];
  let agentKey: string;

  before(async () => {
    const build = await ensureDashboardBuilt();
    assert.ok(build.result === 'fresh' || build.result === 'built', `the dashboard could not be built: ${'reason' in build ? build.reason : ''}`);
    assert.ok(existsSync(join(DASHBOARD_DIR, 'dist', 'index.html')));
    stack = await startStack();
    await seed(stack);
    agentKey = (await api<{ key: string }>(stack.gateUrl, ADMIN_KEY, 'POST', '/api/api-keys', { name: 'billing-agent', scopes: ['request:create', 'request:read'] })).key;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    context = await browser.newContext({ viewport: { width: 1440, height: 900 }, baseURL: stack.observeUrl });
    page = await context.newPage();
    page.setDefaultTimeout(WAIT);
    problems = watchConsole(page);
  });

  after(async () => {
    await browser?.close();
    await stack?.observe.app.close();
    await stack?.gate.app.close();
    if (stack) rmSync(stack.dir, { recursive: true, force: true });
  });

  const nav = () => page.getByRole('navigation', { name: 'Main' });
  const noProblems = () => assert.deepEqual(problems.splice(0), [], 'no console errors and no page errors');

  test('signs in with a key of each service; the gate key is exchanged for a dashboard session', async () => {
    await page.goto('/');
    await page.getByRole('heading', { name: 'Sign in to Vigil' }).waitFor();
    await shot(page, 'sign-in');
    // A wrong key is refused in words.
    await page.getByLabel('Your name').fill('Ada');
    await page.getByLabel('Observe API key').fill('vgl_wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Observe did not accept this API key.').waitFor();
    problems.splice(0); // the browser logs the refused request (401) as a console error: expected here

    await page.getByLabel('Observe API key').fill(stack.observeKey);
    await page.getByLabel('Gate API key').fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    await page.getByText('Deciding as').waitFor();
    assert.match(await page.locator('.whoami').innerText(), /dashboard:Ada/);

    // Only the session token is kept, in sessionStorage; never the gate key.
    const stored = await page.evaluate(() => sessionStorage.getItem('vigil.credentials') ?? '');
    assert.match(stored, /"token":"gds_/);
    assert.ok(!stored.includes(ADMIN_KEY), 'the gate key itself is not stored');
    assert.equal(await page.evaluate(() => localStorage.getItem('vigil.credentials')), null);

    // Charts render from /api/analytics.
    await page.locator('canvas[role="img"]').first().waitFor();
    await shot(page, 'overview');
    noProblems();
  });

  test('a session ingested through the API appears by itself; its timeline, chain check and replay work', async () => {
    await nav().getByRole('link', { name: 'Sessions' }).click();
    await page.getByRole('heading', { name: 'Sessions', level: 1 }).waitFor();
    await page.locator('main table tbody tr').first().waitFor();
    assert.equal(await page.getByRole('link', { name: 'checkout-42' }).count(), 0);

    await api(stack.observeUrl, stack.observeKey, 'POST', '/api/events', { events: session('checkout-42', 'billing-agent', 'Billing agent', 60_000, { tags: ['prod', 'checkout'], tool: 'stripe_charge' }) });
    // No reload: the list polls.
    await page.getByRole('link', { name: 'checkout-42' }).waitFor();
    await shot(page, 'sessions');

    await page.getByRole('link', { name: 'checkout-42' }).click();
    await page.getByRole('heading', { name: 'Session checkout-42' }).waitFor();
    await page.getByText('Hash chain valid.').waitFor();
    assert.match(await page.getByTestId('chain-status').innerText(), /All 6 events verified/);
    assert.equal(await page.getByTestId('timeline-event').count(), 6);
    // A payload opens with the keyboard.
    const toolCall = page.getByTestId('timeline-event').filter({ has: page.locator('.badge', { hasText: /^tool_call$/ }) }).locator('summary');
    await toolCall.focus();
    await page.keyboard.press('Enter');
    await page.getByLabel('Payload of event 3').waitFor();
    assert.match(await page.getByLabel('Payload of event 3').innerText(), /refund policy checkout-42/);

    // An evaluation run from the page is chained into the session and shown.
    await page.getByLabel('Saved evaluator').selectOption({ label: 'No payments without approval (rules)' });
    await page.getByRole('button', { name: 'Evaluate this session' }).click();
    await page.getByText(/No payments without approval: failed/).waitFor();
    await page.getByText('Deterministic compliance check').waitFor();
    await page.getByText('All 7 events verified', { exact: false }).waitFor();
    await shot(page, 'session');

    await page.getByRole('link', { name: 'Replay step by step' }).click();
    await page.getByRole('heading', { name: 'Replay of checkout-42' }).waitFor();
    await page.getByText('Step 1: session_started').waitFor();
    await page.getByRole('button', { name: 'Next step' }).click();
    await page.getByRole('button', { name: 'Next step' }).click();
    await page.getByText('Step 3: llm_response').waitFor();
    assert.equal(await page.getByTestId('replay-position').innerText(), '3');
    // The reconstructed context: what the model had been asked and answered.
    await page.getByText('Find the refund policy for order checkout-42').waitFor();
    await page.getByText('Paired with').waitFor();
    // Arrow keys step too.
    await page.getByRole('button', { name: 'Next step' }).focus();
    await page.keyboard.press('ArrowRight');
    await page.getByText('Step 4: tool_call').waitFor();
    await page.keyboard.press('End');
    await page.getByText('Step 7: eval_result').waitFor();
    await page.getByRole('button', { name: 'Previous step' }).click();
    await page.getByText('Step 6: session_ended').waitFor();
    await page.getByRole('cell', { name: 'stripe_charge' }).first().waitFor();
    await shot(page, 'replay');
    noProblems();
  });

  test('an event altered in the database is reported as a broken chain at its step', async () => {
    const { db } = stack.observe.context.database;
    const target = await db.selectFrom('events').select(['id', 'payload']).where('session_id', '=', 'checkout-42').where('seq', '=', 3).executeTakeFirstOrThrow();
    const payload = JSON.parse(target.payload) as Record<string, unknown>;
    await db.updateTable('events').set({ payload: JSON.stringify({ ...payload, arguments: { q: 'refund everything' } }) }).where('id', '=', target.id).execute();

    await page.goto('/sessions/checkout-42');
    await page.getByText('Hash chain broken at step 3.').waitFor();
    assert.match(await page.getByTestId('chain-status').innerText(), /hash does not match the event content/);
    await page.locator('li.broken').getByText('chain broken here').waitFor();
    await shot(page, 'session-tampered');
    noProblems();
  });

  test('approves a pending request and denies another with the reason the policy requires; the gate records dashboard:Ada', async () => {
    const ask = (body: object) => api<{ id: string; status: string }>(stack.gateUrl, agentKey, 'POST', '/api/requests', body);
    const small = await ask({ action: 'pay', params: { amount: 20, to: 'ACME' } });
    assert.equal(small.status, 'approved', 'auto-approved by the policy: never in the queue');
    const deploy = await ask({ action: 'deploy', params: { service: 'checkout', version: '2.4.1' }, urgency: 'normal', context: { sessionId: 'checkout-42' } });
    const payment = await ask({ action: 'pay', params: { amount: 2500, to: 'ACME', invoice: '4411' }, urgency: 'critical', context: { sessionId: 'checkout-42', agentId: 'billing-agent' } });

    await nav().getByRole('link', { name: /Approval queue/ }).click();
    await page.getByRole('heading', { name: 'Approval queue' }).waitFor();
    const rows = page.getByTestId('approval-queue').locator('tbody tr');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="approval-queue"] tbody tr').length === 2);
    // Most urgent first.
    assert.match(await rows.nth(0).innerText(), /critical\s+pay/);
    assert.match(await rows.nth(1).innerText(), /normal\s+deploy/);
    // A new request shows up without a reload.
    const late = await ask({ action: 'rotate_keys', urgency: 'high' });
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="approval-queue"] tbody tr').length === 3);
    assert.match(await rows.nth(1).innerText(), /high\s+rotate_keys/);
    await shot(page, 'approvals');

    // Approve the deploy.
    await page.getByRole('link', { name: new RegExp(`deploy request ${deploy.id}`) }).click();
    await page.getByRole('heading', { name: 'Request: deploy' }).waitFor();
    await page.getByText('"version": "2.4.1"').waitFor();
    await page.getByText('route_to_human').first().waitFor();
    await page.getByLabel('Reason (optional)').fill('release checked');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Approved as dashboard:Ada.').waitFor();
    await page.getByTestId('decided-by').getByText('dashboard:Ada').waitFor();
    const audit = page.getByTestId('audit-trail');
    await audit.getByRole('row').filter({ hasText: 'approved' }).filter({ hasText: 'dashboard:Ada' }).waitFor();
    await audit.getByRole('row').filter({ hasText: 'created' }).filter({ hasText: 'api:billing-agent' }).waitFor();
    await shot(page, 'approval-decided');

    // Deny the payment: the policy requires a reason.
    await page.goto(`/approvals/${payment.id}`);
    await page.getByLabel('Reason (required by the policy)').waitFor();
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.getByText('The policy that routed this request requires a reason for the decision.').waitFor();
    assert.equal((await api<{ status: string }>(stack.gateUrl, ADMIN_KEY, 'GET', `/api/requests/${payment.id}`)).status, 'pending', 'nothing was sent');
    await page.getByLabel('Reason (required by the policy)').fill('invoice 4411 was already paid');
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.getByText('Denied as dashboard:Ada.').waitFor();
    await page.getByTestId('decision-reason').getByText('invoice 4411 was already paid').waitFor();
    await audit.getByRole('row').filter({ hasText: 'denied' }).filter({ hasText: 'invoice 4411 was already paid' }).waitFor();

    // The gate itself says who decided: the name comes from the dashboard session.
    const decided = await api<{ status: string; decidedBy: string; decisionReason: string }>(stack.gateUrl, ADMIN_KEY, 'GET', `/api/requests/${payment.id}`);
    assert.deepEqual([decided.status, decided.decidedBy, decided.decisionReason], ['denied', 'dashboard:Ada', 'invoice 4411 was already paid']);
    const approved = await api<{ status: string; decidedBy: string }>(stack.gateUrl, ADMIN_KEY, 'GET', `/api/requests/${deploy.id}`);
    assert.deepEqual([approved.status, approved.decidedBy], ['approved', 'dashboard:Ada']);

    // Back in the queue only the late request waits.
    await nav().getByRole('link', { name: /Approval queue/ }).click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="approval-queue"] tbody tr').length === 1);
    assert.match(await rows.nth(0).innerText(), new RegExp('rotate_keys'));
    void late;
    noProblems();
  });

  test('the policy simulator answers without creating a request', async () => {
    const before = (await api<unknown[]>(stack.gateUrl, ADMIN_KEY, 'GET', '/api/requests?limit=500')).length;
    await nav().getByRole('link', { name: 'Policies' }).click();
    await page.getByRole('heading', { name: 'Policies', level: 1 }).waitFor();
    await page.getByLabel('Action', { exact: true }).fill('pay');
    await page.getByLabel('Parameters (JSON object)').fill('{"amount": 40}');
    await page.getByRole('button', { name: 'Try it' }).click();
    await page.getByTestId('simulation').getByText('approved').waitFor();
    await page.getByLabel('Parameters (JSON object)').fill('{"amount": 4000}');
    await page.getByRole('button', { name: 'Try it' }).click();
    await page.getByTestId('simulation').getByText('A decision on it needs a reason.').waitFor();
    await page.getByLabel('Parameters (JSON object)').fill('{"amount": ');
    await page.getByRole('button', { name: 'Try it' }).click();
    await page.getByText(/Parameters is not valid JSON/).waitFor();
    await page.getByLabel('Parameters (JSON object)').fill('{"amount": 4000}');
    await page.getByRole('button', { name: 'Try it' }).click();
    await page.getByTestId('simulation').waitFor();
    await shot(page, 'policies');
    assert.equal((await api<unknown[]>(stack.gateUrl, ADMIN_KEY, 'GET', '/api/requests?limit=500')).length, before);
    noProblems();
  });

  test('every other page loads its data without errors, with labelled controls', async () => {
    const pages: [string, string, string | null][] = [
      ['/agents', 'Agents', 'agents'],
      ['/agents/support-bot', 'Support bot', 'agent'],
      ['/alerts', 'Alerts', 'alerts'],
      ['/benchmarks', 'Benchmarks', null],
      ['/guardrails', 'Guardrails', 'guardrails'],
      ['/recall', 'Recall search', null],
      ['/webhooks', 'Webhooks', 'webhooks'],
      ['/keys', 'API keys', 'keys'],
    ];
    for (const [path, heading, name] of pages) {
      await page.goto(path);
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      await page.waitForLoadState('networkidle');
      assert.equal(await page.locator('.error').count(), 0, `${path} shows an error: ${await page.locator('.error').allInnerTexts()}`);
      assert.equal(await page.getByRole('status').filter({ hasText: 'Loading' }).count(), 0, `${path} is still loading`);
      // Every form control has a label.
      const unlabelled = await page.evaluate(() =>
        [...document.querySelectorAll('input, select, textarea')]
          .filter((el) => !(el as HTMLInputElement).labels?.length && !el.getAttribute('aria-label'))
          .map((el) => el.outerHTML.slice(0, 80)),
      );
      assert.deepEqual(unlabelled, [], `${path}: controls without a label`);
      if (name) await shot(page, name);
    }

    await page.goto('/agents/support-bot');
    await page.getByText('Error rate', { exact: true }).waitFor();
    await page.getByLabel('Reason for pausing (optional)').fill('too many errors');
    await page.getByRole('button', { name: 'Pause agent' }).click();
    await page.getByText(/paused\s+since/).waitFor();
    assert.equal((await api<{ pauseReason: string }>(stack.observeUrl, stack.observeKey, 'GET', '/api/agents/support-bot')).pauseReason, 'too many errors');
    await page.getByRole('button', { name: 'Resume agent' }).click();
    await page.getByRole('button', { name: 'Pause agent' }).waitFor();

    await page.goto('/benchmarks');
    await page.getByRole('link', { name: 'Prompt v1 vs v2' }).click();
    await page.getByText('Comparisons (differences are B − A)').waitFor();
    await shot(page, 'benchmark');

    await page.goto('/recall');
    await page.getByLabel('Search for').fill('refund policy');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText(/matches; the best/).waitFor();
    await shot(page, 'recall');

    await page.goto('/webhooks');
    await page.getByRole('button', { name: /Deliveries/ }).first().click();
    await page.getByText('Deliveries to http://127.0.0.1:9/gate-events').waitFor();
    await page.getByRole('cell', { name: 'request.created' }).first().waitFor();
    noProblems();
  });

  test('signing out ends the gate session on the server and forgets the keys', async () => {
    const token = JSON.parse(await page.evaluate(() => sessionStorage.getItem('vigil.credentials') ?? '{}')) as { gate: { token: string } };
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to Vigil' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('vigil.credentials')), null);
    const after = await fetch(`${stack.gateUrl}/api/requests`, { headers: { authorization: `Bearer ${token.gate.token}` } });
    assert.equal(after.status, 401);
    noProblems();
  });
});
