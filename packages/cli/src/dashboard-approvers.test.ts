/**
 * The dashboard's view of the approval workflow in a real browser (see dashboard-harness.ts): a
 * request's escalation tier and its progress towards several approvals on its page (a vote from
 * the dashboard counted, the last one deciding), and the approver groups and delegations page.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN_KEY, api, chromiumSkip, nav, signIn, startStack, type Stack } from './dashboard-harness.ts';

describe('dashboard in a real browser: approvers, several approvals, escalation', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
    await signIn(stack, { observe: stack.observeKey, gate: ADMIN_KEY });
  });
  after(async () => {
    await stack?.close();
  });

  const admin = <T>(method: string, path: string, body?: unknown) => api<T>(stack.gateUrl, ADMIN_KEY, method, path, body);

  test('a request needing two approvals shows its progress and escalation tier; the dashboard vote decides it', async () => {
    const { page } = stack;
    await admin('POST', '/api/policies', {
      name: 'two approvals',
      rules: [
        {
          match: { action: 'wire' },
          decision: 'route_to_human',
          quorum: { approvals: 2 },
          onDeadline: { escalate: [{ approvers: ['group:leads'], timeoutSeconds: 3600 }] },
        },
      ],
    });
    const alice = (await admin<{ key: string }>('POST', '/api/api-keys', { name: 'alice', scopes: ['request:decide', 'request:read'] })).key;
    const request = await admin<{ id: string }>('POST', '/api/requests', {
      action: 'wire',
      params: { amount: 9000 },
      expiresAt: new Date(Date.now() + 1500).toISOString(),
    });
    // The first deadline passes: the scanner (jobs do not run in this stack) escalates the request to tier 1.
    await new Promise((resolve) => setTimeout(resolve, 1600));
    await stack.gate.requests.expireDue();
    await api(stack.gateUrl, alice, 'POST', `/api/requests/${request.id}/decide`, { decision: 'approved' });

    await page.goto(`/approvals/${request.id}`);
    await page.getByRole('heading', { name: 'Request: wire' }).waitFor();
    await page.getByTestId('request-escalation').getByText('tier 1').waitFor();
    await page.getByTestId('request-approvals').getByText('1 of 2').waitFor();
    await page.getByText('approved by api:alice').waitFor();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Approved as dashboard:Ada.').waitFor();
    await page.getByTestId('request-approvals').getByText('2 of 2').waitFor();
    await page.getByText('approved by api:alice, dashboard:Ada').waitFor();
    const audit = page.getByTestId('audit-trail');
    await audit.getByRole('row').filter({ hasText: 'escalated' }).waitFor();
    await audit.getByRole('row').filter({ hasText: 'voted' }).filter({ hasText: 'api:alice' }).waitFor();
    stack.noProblems();
  });

  test('the approvers page lists groups and delegations, active or revoked', async () => {
    const { page } = stack;
    await admin('POST', '/api/approver-groups', { name: 'leads', members: ['slack:U1', 'api:alice'], description: 'Team leads' });
    const now = Date.now();
    await admin('POST', '/api/delegations', {
      delegator: 'slack:U1',
      delegate: 'slack:U2',
      endsAt: new Date(now + 86_400_000).toISOString(),
      reason: 'holiday',
    });
    const revoked = await admin<{ id: string }>('POST', '/api/delegations', {
      delegator: 'api:alice',
      delegate: 'api:bob',
      endsAt: new Date(now + 86_400_000).toISOString(),
    });
    await admin('DELETE', `/api/delegations/${revoked.id}`);

    await nav(page).getByRole('link', { name: 'Approvers' }).click();
    await page.getByRole('heading', { name: 'Approvers', level: 1 }).waitFor();
    const groups = page.getByTestId('approver-groups');
    await groups.getByRole('row').filter({ hasText: 'group:leads' }).filter({ hasText: 'slack:U1, api:alice' }).filter({ hasText: 'Team leads' }).waitFor();
    const delegations = page.getByTestId('delegations');
    await delegations.getByRole('row').filter({ hasText: 'slack:U2' }).filter({ hasText: 'active' }).filter({ hasText: 'holiday' }).waitFor();
    await delegations.getByRole('row').filter({ hasText: 'api:bob' }).filter({ hasText: 'revoked' }).waitFor();
    assert.equal(await delegations.locator('tbody tr').count(), 2);
    stack.noProblems();
  });
  test('groups and delegations are made from the page, then deleted and revoked from their rows, each recorded in the change log as the signed-in user', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Approvers' }).click();
    await page.getByRole('heading', { name: 'Approvers', level: 1 }).waitFor();

    await page.getByLabel('Name (rules name it as group:<name>)').fill('oncall');
    await page.getByLabel(/^Members/).fill('slack:U7, api:carol');
    await page.getByLabel('Description').fill('On call this week');
    await page.getByRole('button', { name: 'Create group' }).click();
    await page.getByText('Created group:oncall.').waitFor();
    const groups = page.getByTestId('approver-groups');
    const group = groups.getByRole('row').filter({ hasText: 'group:oncall' });
    await group.filter({ hasText: 'slack:U7, api:carol' }).filter({ hasText: 'On call this week' }).waitFor();

    const tomorrow = new Date(Date.now() + 86_400_000);
    const local = new Date(tomorrow.getTime() - tomorrow.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await page.getByLabel('Decider (out of office)').fill('slack:U7');
    await page.getByLabel('Delegate (decides meanwhile)').fill('slack:U8');
    await page.getByLabel('Until').fill(local);
    await page.getByLabel('Reason').fill('parental leave');
    await page.getByRole('button', { name: 'Delegate', exact: true }).click();
    await page.getByText(/^slack:U8 decides for slack:U7 until /).waitFor();
    const delegation = page.getByTestId('delegations').getByRole('row').filter({ hasText: 'slack:U8' }).filter({ hasText: 'parental leave' });
    await delegation.filter({ hasText: 'active' }).waitFor();

    await delegation.getByRole('button', { name: /Revoke/ }).click();
    await delegation.filter({ hasText: 'revoked' }).waitFor();
    page.once('dialog', (dialog) => void dialog.accept());
    await group.getByRole('button', { name: /Delete/ }).click();
    await group.waitFor({ state: 'detached' });

    const { groups: left } = await admin<{ groups: { name: string }[] }>('GET', '/api/approver-groups');
    assert.equal(
      left.some((g) => g.name === 'oncall'),
      false,
    );
    const { delegations } = await admin<{ delegations: { delegate: string; revokedAt: string | null; active: boolean }[] }>('GET', '/api/delegations');
    const made = delegations.find((d) => d.delegate === 'slack:U8')!;
    assert.ok(made.revokedAt !== null && !made.active);
    const { entries } = await admin<{ entries: { resource: string; action: string; actor: string }[] }>('GET', '/api/audit/changes?limit=50');
    const byDashboard = entries.filter((c) => c.actor === 'dashboard:Ada').map((c) => `${c.resource} ${c.action}`);
    for (const expected of ['approver_group created', 'approver_group deleted', 'delegation created'])
      assert.ok(byDashboard.includes(expected), `${expected} in ${JSON.stringify(byDashboard)}`);
    assert.ok(
      byDashboard.some((change) => change.startsWith('delegation ') && change !== 'delegation created'),
      `the revocation in ${JSON.stringify(byDashboard)}`,
    );
    stack.noProblems();
  });
});
