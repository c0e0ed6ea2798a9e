/**
 * The dashboard's edit forms and filters in a real browser (see dashboard-harness.ts): an alert
 * rule, a guardrail and a gate policy edited through their prefilled forms (the API's validation
 * errors shown, the change read back from the API), the sessions' search, date range and filters
 * kept in the URL across a reload and back, the approval queue's agent, parameters and policy, the
 * navigation's pending badge dropping as soon as a decision is made, and the navigation's column
 * running the full height of a long page.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN_KEY, api, chromiumSkip, nav, seedGate, seedObserve, settled, shot, signIn, startStack, type Stack } from './dashboard-harness.ts';

/** A date input's value (local calendar day) `days` from today. */
function day(days: number): string {
  const date = new Date(Date.now() + days * 86_400_000);
  return `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, '0')}-${String(date.getDate()).padStart(2, '0')}`;
}

/** The browser logs a refused call as a console error: takes exactly that one off the list, so any other still fails the test. */
function expectRefused(stack: Stack, status: number, path: RegExp): void {
  const refused = stack.problems.filter((p) => p.includes(`status of ${status}`) && path.test(p));
  assert.equal(refused.length, 1, `one refused call to ${path}: ${stack.problems.join('; ')}`);
  stack.problems.splice(stack.problems.indexOf(refused[0]!), 1);
}

describe('dashboard in a real browser: edits, filters and the queue', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  let agentKey: string;
  before(async () => {
    stack = await startStack();
    await seedObserve(stack);
    ({ agentKey } = await seedGate(stack));
    await signIn(stack, { observe: stack.observeKey, gate: ADMIN_KEY });
  });
  after(() => stack?.close());

  test('an alert rule is edited in its prefilled form; an invalid threshold shows the API’s error and changes nothing', async () => {
    const { page } = stack;
    type Rule = { id: string; name: string; threshold: number; windowMinutes: number; scope: { agentId?: string } };
    const rules = async () => (await api<{ rules: Rule[] }>(stack.observeUrl, stack.observeKey, 'GET', '/api/alerts/rules')).rules;
    await page.goto('/alerts');
    await page.getByRole('button', { name: 'Edit Support errors above 20%' }).click();
    const form = page.getByRole('form', { name: 'Edit rule Support errors above 20%' });
    assert.equal(await form.getByLabel('Name').inputValue(), 'Support errors above 20%');
    assert.equal(await form.getByLabel('Threshold').inputValue(), '0.2');
    assert.equal(await form.getByLabel('Window (minutes)').inputValue(), '60');
    assert.equal(await form.getByLabel('Only this agent (optional)').inputValue(), 'support-bot');
    await shot(page, 'alert-edit');

    await form.getByLabel('Threshold').fill('5');
    await form.getByRole('button', { name: 'Save rule' }).click();
    await form.locator('.error li', { hasText: 'threshold of error_rate_exceeds is a ratio from 0 to 1' }).waitFor();
    await form.getByText('The rule was not saved').waitFor();
    expectRefused(stack, 400, /\/api\/alerts\/rules\//);
    assert.equal((await rules())[0]!.threshold, 0.2);

    await form.getByLabel('Name').fill('Support errors above 35%');
    await form.getByLabel('Threshold').fill('0.35');
    await form.getByLabel('Window (minutes)').fill('30');
    await form.getByRole('button', { name: 'Save rule' }).click();
    await page.getByText('Rule “Support errors above 35%” saved').waitFor();
    await page.getByRole('cell', { name: 'Error rate exceeds 35.0% over 30 minutes' }).waitFor();
    const [rule] = await rules();
    assert.deepEqual([rule!.name, rule!.threshold, rule!.windowMinutes, rule!.scope.agentId], ['Support errors above 35%', 0.35, 30, 'support-bot']);
    stack.noProblems();
  });

  test('a guardrail is edited in its prefilled form; an invalid limit shows the API’s error', async () => {
    const { page } = stack;
    type Guardrail = { name: string; agentId: string | null; conditionConfig: Record<string, unknown>; cooldownMinutes: number; dryRun: boolean };
    const guardrails = async () => (await api<{ rules: Guardrail[] }>(stack.observeUrl, stack.observeKey, 'GET', '/api/guardrails')).rules;
    await page.goto('/guardrails');
    await page.getByRole('button', { name: 'Edit Pause on runaway spend' }).click();
    const form = page.getByRole('form', { name: 'Edit guardrail Pause on runaway spend' });
    assert.equal(await form.getByLabel('Spend above (USD)').inputValue(), '5');
    // Windows are asked for in minutes, like the alert rules', though a guardrail stores ms.
    assert.equal(await form.getByLabel('Period (minutes)').inputValue(), '1440');
    assert.equal(await form.getByLabel('Reason (optional)').inputValue(), 'daily budget exceeded');
    assert.equal(await form.getByLabel(/Dry run/).isChecked(), true);
    await shot(page, 'guardrail-edit');

    await form.getByLabel('Spend above (USD)').fill('-1');
    await form.getByRole('button', { name: 'Save guardrail' }).click();
    await form.getByText('The guardrail was not saved').waitFor();
    await form.locator('.error li', { hasText: 'maxCostUsd' }).waitFor();
    expectRefused(stack, 400, /\/api\/guardrails\//);
    assert.equal((await guardrails())[0]!.conditionConfig.maxCostUsd, 5);

    await form.getByLabel('Spend above (USD)').fill('12.5');
    await form.getByLabel('Agent (empty: every agent)').fill('billing-agent');
    await form.getByLabel('Cooldown (minutes between actions)').fill('30');
    await form.getByLabel('Period (minutes)').fill('120');
    await form.getByLabel(/Dry run/).uncheck();
    await form.getByRole('button', { name: 'Save guardrail' }).click();
    await page.getByText('Guardrail “Pause on runaway spend” saved').waitFor();
    await page.getByRole('cell', { name: /spend above \$12\.50 over 2 hours/ }).waitFor();
    const [rule] = await guardrails();
    assert.deepEqual(
      [rule!.conditionConfig.maxCostUsd, rule!.conditionConfig.periodMs, rule!.agentId, rule!.cooldownMinutes, rule!.dryRun],
      [12.5, 7_200_000, 'billing-agent', 30, false],
    );
    stack.noProblems();
  });

  test('a gate policy is edited in its prefilled form; rules that are not JSON are refused before sending', async () => {
    const { page } = stack;
    type Policy = { id: string; name: string; priority: number; rules: { match: Record<string, unknown> }[] };
    const [policy] = (await api<{ policies: Policy[] }>(stack.gateUrl, ADMIN_KEY, 'GET', '/api/policies')).policies;
    await page.goto('/policies');
    await page.getByRole('button', { name: 'Edit payments' }).click();
    const form = page.getByRole('form', { name: 'Edit policy payments' });
    assert.equal(await form.getByLabel('Name').inputValue(), 'payments');
    assert.equal(await form.getByLabel('Priority (lower runs first)').inputValue(), '10');
    const rulesField = form.getByLabel('Rules (JSON array, first match wins)');
    const rules = JSON.parse(await rulesField.inputValue()) as Policy['rules'];
    assert.deepEqual(rules, policy!.rules);
    await shot(page, 'policy-edit');

    await rulesField.fill('[{"match": ');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await form.getByText(/Rules are not valid JSON/).waitFor();

    rules[1]!.match.amount = { $lt: 500 };
    await rulesField.fill(JSON.stringify(rules, null, 2));
    await form.getByLabel('Priority (lower runs first)').fill('5');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Policy “payments” saved').waitFor();
    await page.getByRole('cell', { name: 'action = "pay" and amount < 500' }).waitFor();
    const saved = (await api<{ policies: Policy[] }>(stack.gateUrl, ADMIN_KEY, 'GET', '/api/policies')).policies.find((p) => p.id === policy!.id)!;
    assert.deepEqual([saved.priority, saved.rules[1]!.match.amount], [5, { $lt: 500 }]);
    stack.noProblems();
  });

  test('a new policy made from the form as it opens escalates its routed requests once, then denies them (the console’s default plan)', async () => {
    const { page } = stack;
    type Rule = { decision: string; onDeadline?: { escalate: { timeoutSeconds: number }[]; remindBeforeSeconds: number } };
    await page.goto('/policies');
    const form = page.getByRole('form', { name: 'New policy' });
    await form.getByLabel('Name').fill('console default');
    await form.getByRole('button', { name: 'Save policy' }).click();
    await page
      .getByText(/console default/)
      .first()
      .waitFor();
    const { policies } = await api<{ policies: { name: string; rules: Rule[] }[] }>(stack.gateUrl, ADMIN_KEY, 'GET', '/api/policies');
    const made = policies.find((p) => p.name === 'console default')!;
    const routing = made.rules.find((rule) => rule.decision === 'route_to_human')!;
    assert.equal(routing.onDeadline?.escalate.length, 1);
    assert.equal(routing.onDeadline?.escalate[0]!.timeoutSeconds, 3600);
    assert.equal(routing.onDeadline?.remindBeforeSeconds, 600);
    await api(stack.gateUrl, ADMIN_KEY, 'DELETE', `/api/policies/${(made as unknown as { id: string }).id}`);
    stack.noProblems();
  });

  test('the sessions’ search, agent, status and date range live in the URL: a reload and back keep them', async () => {
    const { page } = stack;
    const failed = await api<{ sessions: { id: string }[]; total: number }>(
      stack.observeUrl,
      stack.observeKey,
      'GET',
      '/api/sessions?agentId=support-bot&status=error&limit=500',
    );
    assert.ok(failed.total > 0);
    const shownIds = () => page.locator('tbody tr td:first-child a').allInnerTexts();
    await page.goto('/sessions');
    await page.getByLabel('Search (text in their events)').fill('timed out');
    await page.getByLabel('Started from').fill(day(-2));
    await page.getByLabel('Started until').fill(day(0));
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByLabel('Agent').selectOption('support-bot');
    // Every failed session of support-bot, and only those, mentions the timeout.
    await page.waitForFunction((n) => document.querySelectorAll('tbody tr').length === n, failed.total);
    assert.deepEqual((await shownIds()).sort(), failed.sessions.map((s) => s.id).sort());
    await page.getByLabel('Status').selectOption('error');
    const url = new URL(page.url());
    assert.deepEqual(Object.fromEntries(url.searchParams), { q: 'timed out', from: day(-2), to: day(0), agent: 'support-bot', status: 'error' });

    const keptFilters = async () => {
      await page.waitForFunction((n) => document.querySelectorAll('tbody tr').length === n, failed.total);
      assert.equal(await page.getByLabel('Search (text in their events)').inputValue(), 'timed out');
      assert.equal(await page.getByLabel('Started from').inputValue(), day(-2));
      assert.equal(await page.getByLabel('Started until').inputValue(), day(0));
      assert.equal(await page.getByLabel('Agent').inputValue(), 'support-bot');
      assert.equal(await page.getByLabel('Status').inputValue(), 'error');
      assert.deepEqual((await shownIds()).sort(), failed.sessions.map((s) => s.id).sort());
    };
    await page.reload();
    await keptFilters();
    await shot(page, 'sessions-filtered');
    await page.locator('tbody tr td:first-child a').first().click();
    await page.getByRole('heading', { name: /^Session / }).waitFor();
    await page.goBack();
    assert.equal(page.url(), url.href);
    await keptFilters();

    // A range after the last session: nothing matches.
    await page.getByLabel('Started until').fill(day(2));
    await page.getByLabel('Started from').fill(day(1));
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('No session matches these filters.').waitFor();
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 25);
    assert.equal(new URL(page.url()).search, '');
    assert.equal(await page.getByLabel('Search (text in their events)').inputValue(), '');
    stack.noProblems();
  });

  test('the navigation’s dark column runs to the bottom of a long page', async () => {
    const { page } = stack;
    await page.goto('/sessions');
    await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 25);
    await settled(page);
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    assert.ok(height > 1.5 * page.viewportSize()!.height, `the sessions page is longer than the window (${height}px)`);
    // The bottom left corner of a full-page capture: the sidebar's colour (#111827), not the page's.
    const png = await page.screenshot({ fullPage: true, clip: { x: 0, y: height - 20, width: 20, height: 20 } });
    const [r, g, b] = await page.evaluate(async (base64) => {
      const image = new Image();
      image.src = `data:image/png;base64,${base64}`;
      await image.decode();
      const canvas = document.createElement('canvas');
      canvas.width = image.width;
      canvas.height = image.height;
      const context = canvas.getContext('2d')!;
      context.drawImage(image, 0, 0);
      return [...context.getImageData(10, 10, 1, 1).data];
    }, png.toString('base64'));
    assert.deepEqual([r, g, b], [0x11, 0x18, 0x27]);
    stack.noProblems();
  });

  test('the queue shows each request’s agent, first parameters and policy; the pending badge drops as soon as a decision is made', async () => {
    const { page } = stack;
    const ask = (body: object) => api<{ id: string; status: string }>(stack.gateUrl, agentKey, 'POST', '/api/requests', body);
    const payment = await ask({ action: 'pay', params: { amount: 2500, to: 'ACME', invoice: '4411', memo: 'Q4' }, context: { agentId: 'billing-agent' } });
    const deploy = await ask({ action: 'deploy', params: { service: 'checkout' } });
    assert.deepEqual([payment.status, deploy.status], ['pending', 'pending']);

    await nav(page)
      .getByRole('link', { name: /Approval queue/ })
      .click();
    const queue = page.getByTestId('approval-queue');
    const paymentRow = queue.getByRole('row').filter({ hasText: 'pay' });
    await paymentRow.getByRole('cell', { name: 'billing-agent' }).waitFor();
    await paymentRow.getByRole('cell', { name: 'amount: 2,500 · invoice: 4411 · memo: Q4 +1 more' }).waitFor();
    await paymentRow.getByRole('cell', { name: 'payments', exact: true }).waitFor();
    const deployRow = queue.getByRole('row').filter({ hasText: 'deploy' });
    await deployRow.getByRole('cell', { name: 'service: checkout' }).waitFor();
    await deployRow.getByRole('cell', { name: 'no rule matched' }).waitFor();

    const badge = nav(page).locator('.badge');
    await page.waitForFunction(() => document.querySelector('nav[aria-label="Main"] .badge')?.textContent === '2 pending');
    await page.getByRole('link', { name: new RegExp(`deploy request ${deploy.id}`) }).click();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Approved as dashboard:Ada.').waitFor();
    // The badge polls every 10 s; a decision made here reloads it at once.
    await page.waitForFunction(() => document.querySelector('nav[aria-label="Main"] .badge')?.textContent === '1 pending', undefined, { timeout: 2000 });
    assert.equal(await badge.count(), 1);
    stack.noProblems();
  });
});
