/**
 * The dashboard's approval pages in a real browser (see dashboard-harness.ts): the queue sorted by
 * urgency and refreshing itself, approving a request and denying another with the reason its policy
 * requires (recorded by the gate as dashboard:<name>, with the audit trail), the policy simulator,
 * webhooks and keys (an observe key created with chosen scopes), the change log of both services,
 * and a request decided from Slack (a signed interaction; the Web API is a local fake) shown with
 * the platform and the user.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { TestHttpServer } from '@vigil/platform/testing';
import { ADMIN_KEY, api, chromiumSkip, nav, seedGate, settled, shot, signIn, startStack, type Stack } from './dashboard-harness.ts';

const SLACK_SIGNING_SECRET = 'slack-signing-secret-for-the-dashboard-test';
const SLACK_CHANNEL = 'C0APPROVALS';

/** Slack's Web API as far as the gate calls it: every method answers ok, a post with its channel and ts. */
function fakeSlack(): TestHttpServer {
  return new TestHttpServer((request, res) => {
    const body = request.url.endsWith('/chat.postMessage') ? { ok: true, channel: SLACK_CHANNEL, ts: '1764100000.000100' } : { ok: true };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
}

/** A Slack user's click on a request's button, form-encoded and signed the way Slack signs it. */
async function slackClick(
  gateUrl: string,
  user: { id: string; username: string },
  action: 'vigil_approve' | 'vigil_deny',
  requestId: string,
): Promise<Response> {
  const payload = { type: 'block_actions', user, channel: { id: SLACK_CHANNEL }, actions: [{ action_id: action, value: requestId }] };
  const body = `payload=${encodeURIComponent(JSON.stringify(payload))}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = `v0=${createHmac('sha256', SLACK_SIGNING_SECRET).update(`v0:${timestamp}:${body}`).digest('hex')}`;
  return fetch(`${gateUrl}/api/chat/slack/interactions`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-slack-request-timestamp': timestamp, 'x-slack-signature': signature },
    body,
  });
}

describe('dashboard in a real browser: approvals', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  let agentKey: string;
  let slack: TestHttpServer;
  before(async () => {
    slack = await fakeSlack().start();
    stack = await startStack({
      gateEnv: {
        SLACK_BOT_TOKEN: 'xoxb-dashboard-test',
        SLACK_SIGNING_SECRET,
        SLACK_CHANNEL_ID: SLACK_CHANNEL,
        SLACK_API_URL: `${slack.url}/api/`,
        SLACK_DECIDERS: 'U0ALICE',
      },
    });
    ({ agentKey } = await seedGate(stack));
    await signIn(stack, { observe: stack.observeKey, gate: ADMIN_KEY });
  });
  after(async () => {
    await stack?.close();
    await slack?.stop();
  });

  test('approves a pending request and denies another with the reason its policy requires; the gate records dashboard:Ada', async () => {
    const { page } = stack;
    const ask = (body: object) => api<{ id: string; status: string }>(stack.gateUrl, agentKey, 'POST', '/api/requests', body);
    const small = await ask({ action: 'pay', params: { amount: 20, to: 'ACME' } });
    assert.equal(small.status, 'approved', 'auto-approved by the policy: never in the queue');
    const deploy = await ask({ action: 'deploy', params: { service: 'checkout', version: '2.4.1' }, urgency: 'normal', context: { sessionId: 'checkout-42' } });
    const payment = await ask({
      action: 'pay',
      params: { amount: 2500, to: 'ACME', invoice: '4411' },
      urgency: 'critical',
      context: { sessionId: 'checkout-42', agentId: 'billing-agent' },
    });

    await nav(page)
      .getByRole('link', { name: /Approval queue/ })
      .click();
    await page.getByRole('heading', { name: 'Approval queue' }).waitFor();
    const rows = page.getByTestId('approval-queue').locator('tbody tr');
    const rowCount = (n: number) => page.waitForFunction((count) => document.querySelectorAll('[data-testid="approval-queue"] tbody tr').length === count, n);
    await rowCount(2);
    // Most urgent first.
    assert.match(await rows.nth(0).innerText(), /critical\s+pay/);
    assert.match(await rows.nth(1).innerText(), /normal\s+deploy/);
    // A new request shows up without a reload, in its place.
    await ask({ action: 'rotate_keys', urgency: 'high' });
    await rowCount(3);
    assert.match(await rows.nth(1).innerText(), /high\s+rotate_keys/);
    await shot(page, 'approvals');

    // Approve the deploy, with an optional reason.
    await page.getByRole('link', { name: new RegExp(`deploy request ${deploy.id}`) }).click();
    await page.getByRole('heading', { name: 'Request: deploy' }).waitFor();
    await page.getByText('"version": "2.4.1"').waitFor();
    await page.getByText('route_to_human').first().waitFor();
    // The field's hint is its accessible description (Field points aria-describedby at it).
    const reasonHint = await page.getByLabel('Reason (optional)').getAttribute('aria-describedby');
    assert.match(await page.locator(`#${reasonHint}`).innerText(), /^Recorded with your decision as dashboard:Ada, in the audit trail/);
    await page.getByLabel('Reason (optional)').fill('release checked');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Approved as dashboard:Ada.').waitFor();
    await page.getByTestId('decided-by').getByText('dashboard:Ada').waitFor();
    const audit = page.getByTestId('audit-trail');
    // Each entry names the key behind the actor: Ada chose her name, the key is the admin key she signed in with.
    await audit.getByRole('row').filter({ hasText: 'approved' }).filter({ hasText: 'dashboard:Ada (key admin (GATE_ADMIN_KEY) · …' }).waitFor();
    await audit.getByRole('row').filter({ hasText: 'created' }).filter({ hasText: 'api:billing-agent (key billing-agent · …' }).waitFor();
    // Both entries verify in the request's hash chain.
    assert.equal(
      await audit
        .getByRole('row')
        .filter({ hasText: /created|approved/ })
        .getByText('valid', { exact: true })
        .count(),
      2,
    );
    await shot(page, 'approval-decided');

    // Deny the payment: its policy rule requires a reason, so the form asks before sending anything.
    await page.goto(`/approvals/${payment.id}`);
    await page.getByLabel('Reason (required by the policy)').waitFor();
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.getByText('The policy that routed this request requires a reason for the decision.').waitFor();
    assert.equal((await api<{ status: string }>(stack.gateUrl, ADMIN_KEY, 'GET', `/api/requests/${payment.id}`)).status, 'pending');
    await page.getByLabel('Reason (required by the policy)').fill('invoice 4411 was already paid');
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.getByText('Denied as dashboard:Ada.').waitFor();
    await page.getByTestId('decision-reason').getByText('invoice 4411 was already paid').waitFor();
    await audit.getByRole('row').filter({ hasText: 'denied' }).filter({ hasText: 'invoice 4411 was already paid' }).waitFor();

    // The gate itself says who decided: the name comes from the dashboard session.
    const denied = await api<{ status: string; decidedBy: string; decisionReason: string }>(stack.gateUrl, ADMIN_KEY, 'GET', `/api/requests/${payment.id}`);
    assert.deepEqual([denied.status, denied.decidedBy, denied.decisionReason], ['denied', 'dashboard:Ada', 'invoice 4411 was already paid']);
    const approved = await api<{ status: string; decidedBy: string; decisionReason: string }>(stack.gateUrl, ADMIN_KEY, 'GET', `/api/requests/${deploy.id}`);
    assert.deepEqual([approved.status, approved.decidedBy, approved.decisionReason], ['approved', 'dashboard:Ada', 'release checked']);

    // Back in the queue only the late request waits.
    await nav(page)
      .getByRole('link', { name: /Approval queue/ })
      .click();
    await rowCount(1);
    assert.match(await rows.nth(0).innerText(), /rotate_keys/);
    stack.noProblems();
  });

  test('the audit log lists the entries of all requests with actor and key, and filters them by actor', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
    const log = page.getByTestId('audit-log');
    await log.getByRole('row').filter({ hasText: 'denied' }).filter({ hasText: 'dashboard:Ada (key admin (GATE_ADMIN_KEY) · …' }).waitFor();
    // The payment approved by the policy: the gate decided, no key stands behind it.
    // It is named by the policy's name, its rule counted from 1 (the gate's reason says "rule 1", from 0), the ids on hover.
    const byPolicy = log.getByRole('row').filter({ hasText: 'policy “payments”' });
    await byPolicy.first().waitFor();
    const byPolicyText = await byPolicy.first().innerText();
    assert.doesNotMatch(byPolicyText, /\(key /);
    assert.match(byPolicyText, /Approved by policy “payments”, rule 2/);
    assert.doesNotMatch(await byPolicy.first().locator('td.clip').innerText(), /[0-9a-f]{8}-[0-9a-f]{4}-/, 'no policy id in the details');
    assert.match((await byPolicy.first().locator('[title^="policy:"]').getAttribute('title')) ?? '', /^policy:[0-9a-f-]{36}$/);
    await shot(page, 'audit');

    await page.getByLabel('Actor').selectOption('api:billing-agent');
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('[data-testid="audit-log"] tbody tr')];
      return rows.length > 0 && rows.every((row) => row.textContent?.includes('api:billing-agent (key billing-agent'));
    });
    assert.equal(await log.locator('tbody tr').count(), 4, 'the four requests billing-agent created');
    await log.getByRole('link', { name: /rotate_keys request/ }).click();
    await page.getByRole('heading', { name: 'Request: rotate_keys' }).waitFor();
    stack.noProblems();
  });

  test('the policy simulator answers without creating a request, and says why input is wrong', async () => {
    const { page } = stack;
    const count = async () => (await api<unknown[]>(stack.gateUrl, ADMIN_KEY, 'GET', '/api/requests?limit=500')).length;
    const before = await count();
    await nav(page).getByRole('link', { name: 'Policies' }).click();
    await page.getByRole('heading', { name: 'Policies', level: 1 }).waitFor();
    await page.getByLabel('Action', { exact: true }).fill('pay');
    const params = page.getByLabel('Parameters (JSON object)');
    const tryIt = page.getByRole('button', { name: 'Try it' });
    await params.fill('{"amount": 40}');
    await tryIt.click();
    await page.getByTestId('simulation').getByText('approved', { exact: true }).waitFor();
    await params.fill('{"amount": ');
    await tryIt.click();
    await page.getByText(/Parameters is not valid JSON/).waitFor();
    await params.fill('{"amount": 4000}');
    await tryIt.click();
    await page.getByTestId('simulation').getByText('A decision on it needs a reason.').waitFor();
    await shot(page, 'policies');
    // A draft policy standing in for the stored one.
    await page.getByLabel('Also try a draft policy (not saved)').check();
    await page.getByLabel('The draft stands in for').selectOption({ label: 'payments' });
    await page.getByLabel('Draft rules (JSON array)').fill('[{"match": {"action": "pay"}, "decision": "auto_deny"}]');
    await tryIt.click();
    await page.getByTestId('simulation').getByText('(the draft)').waitFor();
    assert.match(await page.getByTestId('simulation').innerText(), /denied/);
    assert.equal(await count(), before, 'nothing was created');
    stack.noProblems();
  });

  test('webhooks show their deliveries, and keys of both services are listed', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    await page
      .getByRole('button', { name: /Deliveries/ })
      .first()
      .click();
    await page.getByText('Deliveries to http://127.0.0.1:9/gate-events').waitFor();
    await page.getByRole('cell', { name: 'request.created' }).first().waitFor();
    await settled(page);
    await shot(page, 'webhooks');

    await nav(page).getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.getByRole('cell', { name: 'billing-agent' }).first().waitFor();
    await page.getByRole('heading', { name: 'Observe keys' }).waitFor();
    // A key for an agent: ingest (the default) and read.
    await page.getByLabel('New observe key name').fill('researcher');
    await page.getByLabel('read — every query').check();
    await page.getByRole('button', { name: 'Create observe key' }).click();
    await page.getByText('New observe key.').waitFor();
    await page.getByRole('row').filter({ hasText: 'researcher' }).getByRole('cell', { name: 'ingest, read' }).waitFor();
    const observeKeys = await api<{ keys: { name: string; scopes: string[] }[] }>(stack.observeUrl, stack.observeKey, 'GET', '/api/keys');
    assert.deepEqual(observeKeys.keys.find((k) => k.name === 'researcher')?.scopes, ['ingest', 'read']);
    await settled(page);
    await shot(page, 'keys');
    stack.noProblems();
  });

  test('the change log lists both services’ administrative changes with actor, key and before/after, filtered by service and resource', async () => {
    const { page } = stack;
    const rule = await api<{ id: string }>(stack.observeUrl, stack.observeKey, 'POST', '/api/alerts/rules', {
      name: 'Errors above 30%',
      condition: 'error_rate_exceeds',
      threshold: 0.3,
      windowMinutes: 15,
    });
    await api(stack.observeUrl, stack.observeKey, 'PUT', `/api/alerts/rules/${rule.id}`, { enabled: false });

    await nav(page).getByRole('link', { name: 'Change log' }).click();
    await page.getByRole('heading', { name: 'Change log', level: 1 }).waitFor();
    const log = page.getByTestId('change-log');
    const rows = log.locator(':scope > tbody > tr');
    // The seed's policy, created on the gate with its admin key; the rule, created and disabled on observe with the key "admin".
    await rows.filter({ hasText: 'Policy' }).filter({ hasText: '(key admin (GATE_ADMIN_KEY) · …' }).first().waitFor();
    const ruleRows = rows.filter({ hasText: 'Alert rule' }).filter({ hasText: rule.id });
    await ruleRows.nth(1).waitFor();
    assert.equal(await ruleRows.count(), 2, 'created, then disabled');
    for (const text of await ruleRows.allInnerTexts()) {
      assert.match(text, /Observe/);
      assert.match(text, /\(key admin · …/);
    }
    // Newest first: the disabling, whose before/after shows `enabled` going from true to false.
    const disabling = ruleRows.first();
    await disabling.getByText(/fields? changed/).click();
    assert.match(await disabling.getByRole('row').filter({ hasText: 'enabled' }).innerText(), /enabled\s+true\s+false/);
    // The creation lists the fields the rule was created with.
    const creation = ruleRows.nth(1);
    await creation.getByText(/^created \(\d+ fields?\)$/).click();
    assert.match(await creation.getByRole('row').filter({ hasText: 'threshold' }).innerText(), /threshold\s+0\.3/);
    await shot(page, 'changes');

    const serviceCells = () => page.$$eval('[data-testid="change-log"] > tbody > tr > td:nth-child(2)', (cells) => cells.map((c) => c.textContent));
    await page.getByLabel('Service').selectOption('observe');
    await page.getByLabel('Resource').selectOption('alert_rule');
    await page.waitForFunction(() => {
      const cells = [...document.querySelectorAll('[data-testid="change-log"] > tbody > tr > td:nth-child(3)')];
      return cells.length === 2 && cells.every((c) => c.textContent?.startsWith('Alert rule'));
    });
    assert.deepEqual(await serviceCells(), ['Observe', 'Observe']);

    await page.getByLabel('Service').selectOption('gate');
    await page.getByLabel('Resource').selectOption('webhook');
    await page.waitForFunction(() => {
      const cells = [...document.querySelectorAll('[data-testid="change-log"] > tbody > tr > td:nth-child(3)')];
      return cells.length === 1 && cells[0]!.textContent?.startsWith('Webhook');
    });
    assert.deepEqual(await serviceCells(), ['Gate'], 'the webhook the seed registered');
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await ruleRows.nth(1).waitFor();
    stack.noProblems();
  });
  test('a request decided from Slack shows the platform and the user; a click by someone else is shown refused', async () => {
    const { page } = stack;
    const request = await api<{ id: string; status: string }>(stack.gateUrl, agentKey, 'POST', '/api/requests', {
      action: 'restart_service',
      params: { service: 'ledger' },
    });
    assert.equal(request.status, 'pending', 'no rule matches: a person decides');
    // Mallory is not among SLACK_DECIDERS: her click is refused and recorded; Alice's decides.
    assert.equal((await slackClick(stack.gateUrl, { id: 'U0MALLORY', username: 'mallory' }, 'vigil_approve', request.id)).status, 200);
    assert.equal((await api<{ status: string }>(stack.gateUrl, ADMIN_KEY, 'GET', `/api/requests/${request.id}`)).status, 'pending');
    assert.equal((await slackClick(stack.gateUrl, { id: 'U0ALICE', username: 'alice' }, 'vigil_approve', request.id)).status, 200);
    const decided = await api<{ status: string; decidedBy: string }>(stack.gateUrl, ADMIN_KEY, 'GET', `/api/requests/${request.id}`);
    assert.deepEqual([decided.status, decided.decidedBy], ['approved', 'slack:U0ALICE']);

    await page.goto(`/approvals/${request.id}`);
    await page.getByRole('heading', { name: 'Request: restart_service' }).waitFor();
    await page.getByTestId('decided-by').getByText('Slack · alice (U0ALICE)', { exact: true }).waitFor();
    const trail = page.getByTestId('audit-trail');
    await trail.getByRole('row').filter({ hasText: 'approved' }).filter({ hasText: 'Slack · alice (U0ALICE)' }).waitFor();
    const refused = trail.getByRole('row').filter({ hasText: 'decision refused' });
    await refused.filter({ hasText: 'Slack · mallory (U0MALLORY)' }).filter({ hasText: 'tried to approve: not among the deciders of this request' }).waitFor();
    await shot(page, 'approval-from-slack');

    // The audit log says the same, and lists the refusals by themselves.
    await nav(page).getByRole('link', { name: 'Audit log' }).click();
    const log = page.getByTestId('audit-log');
    await log.getByRole('row').filter({ hasText: 'restart_service' }).filter({ hasText: 'Slack · alice (U0ALICE)' }).waitFor();
    await page.getByLabel('Event').selectOption('decision_refused');
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('[data-testid="audit-log"] tbody tr')];
      return rows.length === 1 && rows[0]!.textContent?.includes('Slack · mallory (U0MALLORY)');
    });
    stack.noProblems();
  });
});
