/**
 * The dashboard's Budgets page in a real browser (see dashboard-harness.ts): a budget made from the
 * form, the spend the gate read from observe (a local fake of observe's internal spend route) with
 * its level, the breaches, the agent's request denied, and the breach in the change log; on a
 * request's approval page, the budgets covering it, the soft budget that routed it to a person, and
 * the grant that approved another.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { TestHttpServer } from '@vigil/platform/testing';
import { ADMIN_KEY, api, chromiumSkip, nav, shot, signIn, startStack, type Stack } from './dashboard-harness.ts';

const TOKEN = 'dashboard-budgets-service-token-0123';

/** Observe's spend route as the budget job reads it: `spendUsd` for every query's agent. */
function fakeObserve(spend: { usd: number }): TestHttpServer {
  return new TestHttpServer((request, res) => {
    if (request.url !== '/api/internal/spend') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    const { queries } = JSON.parse(request.body) as { queries: { id: string; value?: string }[] };
    const now = Date.now();
    const d = new Date(now);
    const results = queries.map((q) => ({
      id: q.id,
      windowStart: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()),
      figures: [{ key: q.value ?? '*', spendUsd: spend.usd, agentIds: [q.value ?? 'x'] }],
    }));
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ at: now, results }));
  });
}

describe('dashboard in a real browser: budgets', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  let observe: TestHttpServer;
  const spend = { usd: 0 };
  before(async () => {
    observe = await fakeObserve(spend).start();
    stack = await startStack({ gateEnv: { OBSERVE_URL: observe.url, INTERNAL_SERVICE_TOKEN: TOKEN } });
    await signIn(stack, { observe: stack.observeKey, gate: ADMIN_KEY });
  });
  after(async () => {
    await stack?.close();
    await observe?.stop();
  });

  test('a budget made from the form shows the spend read from observe, its breaches, and denies the agent over its hard threshold', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Budgets' }).click();
    await page.getByRole('heading', { name: 'Budgets', level: 1 }).waitFor();
    await page.getByText('No budget yet.').waitFor();
    await page.getByLabel('Name (used in policies: budgets.<name>.spendUsd)').fill('support-daily');
    await page.getByLabel('Scope').selectOption('agent');
    await page.getByLabel('Agent, session or tag (empty: each one)').fill('support-bot');
    await page.getByLabel('Window').selectOption('day');
    await page.getByLabel('Soft threshold, USD (route to a person)').fill('40');
    await page.getByLabel('Hard threshold, USD (deny)').fill('50');
    await page.getByRole('button', { name: 'Create budget' }).click();
    await page.getByText('Budget support-daily created.').waitFor();
    const row = page.locator('tbody tr').filter({ hasText: 'support-daily' });
    await row.filter({ hasText: 'agent support-bot' }).filter({ hasText: '$50.00' }).filter({ hasText: 'deny and pause' }).waitFor();

    // The job reads $52 for the agent: over the hard threshold.
    spend.usd = 52;
    assert.equal(await stack.gate.jobs.budgets.tick(), true);
    await row.getByRole('button', { name: /Spend/ }).click();
    await page
      .getByTestId('budget-figures')
      .locator('tbody tr')
      .filter({ hasText: 'support-bot' })
      .filter({ hasText: '$52.00' })
      .filter({ hasText: 'hard' })
      .waitFor();
    const breaches = page.getByTestId('budget-breaches').locator('tbody tr');
    await breaches.filter({ hasText: 'hard' }).waitFor();
    await breaches.filter({ hasText: 'soft' }).waitFor();
    await shot(page, 'budgets');

    const denied = await api<{ status: string; decidedBy: string }>(stack.gateUrl, ADMIN_KEY, 'POST', '/api/requests', {
      action: 'refund',
      context: { agentId: 'support-bot' },
    });
    assert.equal(denied.status, 'denied');
    assert.match(denied.decidedBy, /^budget:/);
    assert.ok(
      observe.requests.some((r) => r.url === '/api/internal/agents/support-bot/pause'),
      'the agent was paused in observe',
    );

    // Disabled from its row: requests are no longer held to it.
    await row.getByRole('button', { name: /Disable/ }).click();
    await row.filter({ hasText: 'disabled' }).waitFor();
    const after = await api<{ status: string }>(stack.gateUrl, ADMIN_KEY, 'POST', '/api/requests', { action: 'refund', context: { agentId: 'support-bot' } });
    assert.equal(after.status, 'pending');

    await nav(page).getByRole('link', { name: 'Change log' }).click();
    await page.getByRole('heading', { name: 'Change log', level: 1 }).waitFor();
    await page.getByRole('row').filter({ hasText: 'Budget' }).filter({ hasText: 'breached' }).first().waitFor();
    stack.noProblems();
  });
  test("a request's approval page shows the budgets covering it, the soft budget that routed it to a person, and the grant that approved another", async () => {
    const { page } = stack;
    spend.usd = 52;
    await api(stack.gateUrl, ADMIN_KEY, 'POST', '/api/budgets', {
      name: 'ops-daily',
      scope: 'agent',
      scopeValue: 'ops-bot',
      window: 'day',
      softUsd: 40,
      hardUsd: 100,
    });
    await api(stack.gateUrl, ADMIN_KEY, 'POST', '/api/policies', {
      name: 'restarts are automatic',
      rules: [{ match: { action: 'restart' }, decision: 'auto_approve' }],
    });
    // The job's lease outlives a tick a little: the next tick runs once it has lapsed.
    while (!(await stack.gate.jobs.budgets.tick())) await new Promise((resolve) => setTimeout(resolve, 50));
    const routed = await api<{ id: string; status: string }>(stack.gateUrl, ADMIN_KEY, 'POST', '/api/requests', {
      action: 'restart',
      context: { agentId: 'ops-bot' },
    });
    assert.equal(routed.status, 'pending', 'over the soft budget the policy does not approve it');
    await page.goto(`/approvals/${routed.id}`);
    await page
      .getByTestId('budget-routing')
      .filter({ hasText: 'over a soft budget' })
      .filter({ hasText: 'Budget "ops-daily" soft threshold $40 reached' })
      .waitFor();
    await page
      .getByTestId('request-budgets')
      .locator('tbody tr')
      .filter({ hasText: 'ops-daily' })
      .filter({ hasText: '$52.00' })
      .filter({ hasText: '$40.00' })
      .filter({ hasText: '$100.00' })
      .filter({ hasText: 'soft' })
      .waitFor();
    assert.equal(await page.getByTestId('request-budgets').locator('tbody tr').count(), 1, 'only the budget covering ops-bot');
    await shot(page, 'approval-budgets');

    const grant = await api<{ id: string }>(stack.gateUrl, ADMIN_KEY, 'POST', '/api/grants', { action: 'rotate', agentId: 'ci-bot', maxUses: 1 });
    const approved = await api<{ id: string; status: string; decidedBy: string }>(stack.gateUrl, ADMIN_KEY, 'POST', '/api/requests', {
      action: 'rotate',
      context: { agentId: 'ci-bot' },
    });
    assert.deepEqual([approved.status, approved.decidedBy], ['approved', `grant:${grant.id}`]);
    await page.goto(`/approvals/${approved.id}`);
    const byGrant = page.getByTestId('approved-by-grant');
    await byGrant.filter({ hasText: `grant ${grant.id}` }).waitFor();
    await page.getByText('No budget covers this request.').waitFor();
    await byGrant.getByRole('link').click();
    await page.getByRole('heading', { name: 'Grants', level: 1 }).waitFor();
    stack.noProblems();
  });
});
