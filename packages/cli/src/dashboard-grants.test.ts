/**
 * The dashboard's Grants page in a real browser (see dashboard-harness.ts): a grant made from the
 * form (recorded by the gate as dashboard:Ada) approves the agent's next request at once, its use
 * count moves without a reload, and revoking it from its row sends the next request to a person.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN_KEY, api, chromiumSkip, nav, seedGate, shot, signIn, startStack, type Stack } from './dashboard-harness.ts';

interface Grant {
  id: string;
  status: string;
  uses: number;
  createdBy: string;
  agentId: string | null;
  expiresAt: string | null;
  maxUses: number | null;
}

describe('dashboard in a real browser: grants', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  let agentKey: string;
  before(async () => {
    stack = await startStack();
    ({ agentKey } = await seedGate(stack));
    await signIn(stack, { observe: stack.observeKey, gate: ADMIN_KEY });
  });
  after(async () => {
    await stack?.close();
  });

  test('a grant made from the form approves the agent’s next request, shows its uses, and is revoked from its row', async () => {
    const { page } = stack;
    const ask = () =>
      api<{ id: string; status: string; decidedBy: string | null }>(stack.gateUrl, agentKey, 'POST', '/api/requests', {
        action: 'pay',
        params: { amount: 900, to: 'ACME' },
        context: { agentId: 'billing-agent', sessionId: 'checkout-7' },
      });
    assert.equal((await ask()).status, 'pending', 'routed to a person before any grant');

    await nav(page).getByRole('link', { name: 'Grants' }).click();
    await page.getByRole('heading', { name: 'Grants', level: 1 }).waitFor();
    await page.getByText('No grant is in force.').waitFor();
    await page.getByLabel('Action').fill('pay');
    await page.getByLabel('Agent (context.agentId)').fill('billing-agent');
    await page.getByLabel('For how long').selectOption({ label: '30 minutes' });
    await page.getByLabel('At most this many uses (optional)').fill('2');
    await page.getByLabel('Note (optional)').fill('month-end run');
    await page.getByRole('button', { name: 'Grant', exact: true }).click();
    await page.getByText(/^Granted pay \(grant /).waitFor();
    const table = page.getByTestId('grants');
    const row = table.locator('tbody tr').filter({ hasText: 'agent billing-agent' });
    await row.filter({ hasText: '0 of 2' }).filter({ hasText: 'active' }).waitFor();

    const { grants } = await api<{ grants: Grant[] }>(stack.gateUrl, ADMIN_KEY, 'GET', '/api/grants');
    assert.equal(grants.length, 1);
    const grant = grants[0]!;
    assert.deepEqual([grant.createdBy, grant.agentId, grant.maxUses], ['dashboard:Ada', 'billing-agent', 2]);
    assert.ok(grant.expiresAt !== null);

    const approved = await ask();
    assert.equal(approved.status, 'approved');
    assert.equal(approved.decidedBy, `grant:${grant.id}`);
    // The page polls: the use shows up without a reload.
    await row.filter({ hasText: '1 of 2' }).waitFor();
    await shot(page, 'grants');

    page.once('dialog', (dialog) => void dialog.accept());
    await row.getByRole('button', { name: /Revoke/ }).click();
    await page.getByText('No grant is in force.').waitFor();
    await page.getByLabel('Only grants still in force').uncheck();
    await table.locator('tbody tr').filter({ hasText: 'revoked' }).filter({ hasText: '1 of 2' }).waitFor();
    assert.equal((await api<Grant>(stack.gateUrl, ADMIN_KEY, 'GET', `/api/grants/${grant.id}`)).status, 'revoked');
    assert.equal((await ask()).status, 'pending', 'a revoked grant approves nothing');

    // The change log names both changes, with the resource's label.
    await nav(page).getByRole('link', { name: 'Change log' }).click();
    await page.getByRole('heading', { name: 'Change log', level: 1 }).waitFor();
    await page.getByRole('row').filter({ hasText: 'Grant' }).filter({ hasText: 'revoked' }).first().waitFor();
    stack.noProblems();
  });
});
