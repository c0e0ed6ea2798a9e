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
});
