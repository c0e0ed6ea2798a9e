/**
 * The dashboard's warning about an exposed first-key bootstrap, in a real browser (see
 * dashboard-harness.ts): observe configured to listen beyond loopback with no API key yet shows
 * a loud alert on the sign-in page until the first key exists.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { chromiumSkip, settled, startStack, type Stack } from './dashboard-harness.ts';

describe('dashboard in a real browser: the open first-key bootstrap', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  before(async () => {
    // HOST as observe is configured: it decides what GET /api/health says (the test still listens on 127.0.0.1).
    stack = await startStack({ observeEnv: { HOST: '0.0.0.0' }, firstObserveKey: false });
  });
  after(() => stack.close());

  test('while no observe key exists, an alert says anyone could create the first key; it is gone once the key exists', async () => {
    const { page } = stack;
    await page.goto('/');
    const alert = page.getByRole('alert').filter({ hasText: 'anyone who can reach it can create the first (admin) key' });
    await alert.waitFor();
    await page.getByRole('button', { name: 'Create the first observe key' }).click();
    await page.getByText('Your first observe API key').waitFor();
    const health = page.waitForResponse((response) => new URL(response.url()).pathname === '/api/health');
    await page.reload();
    assert.equal(((await (await health).json()) as { firstKeyBootstrap: string }).firstKeyBootstrap, 'closed');
    await settled(page);
    assert.equal(await alert.count(), 0);
    stack.noProblems();
  });
});
