/**
 * The console of issue 42 in a real browser (see dashboard-harness.ts): counts that agree with
 * their nouns, a header that promises decisions only to a key that can decide, and evaluator rules
 * that get an id the form explains.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN_KEY, api, chromiumSkip, seedGate, seedObserve, settled, signIn, startStack, type Stack } from './dashboard-harness.ts';

describe('dashboard in a real browser: the console', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
    await seedObserve(stack);
    await seedGate(stack);
  });
  after(() => stack?.close());

  test('a gate key that cannot decide is not announced as deciding', async () => {
    const { page } = stack;
    const reader = (await api<{ key: string }>(stack.gateUrl, ADMIN_KEY, 'POST', '/api/api-keys', { name: 'auditor', scopes: ['request:read'] })).key;
    await signIn(stack, { observe: stack.observeKey, gate: reader });
    const header = await page.locator('.whoami').innerText();
    assert.match(header, /Viewing as dashboard:Ada \(this key cannot decide\)/);
    assert.doesNotMatch(header, /Deciding as/);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(stack, { observe: stack.observeKey, gate: ADMIN_KEY });
    assert.match(await page.locator('.whoami').innerText(), /Deciding as dashboard:Ada ·/);
    stack.noProblems();
  });

  test('an LLM call of one message reads "1 message" in the session timeline', async () => {
    const { page } = stack;
    await page.goto('/sessions/researcher-1');
    await page.getByRole('heading', { name: 'Session researcher-1' }).waitFor();
    await settled(page);
    await page.getByText('openai/gpt-4o-mini · 1 message', { exact: true }).first().waitFor();
    assert.equal(await page.getByText(/· 1 messages/).count(), 0);
    stack.noProblems();
  });

  test('an evaluator rule typed without an id gets one, which the form explains', async () => {
    const { page } = stack;
    await page.goto('/evaluators');
    await page.getByRole('heading', { name: 'Evaluators', level: 1 }).waitFor();
    await page.getByText(/Each rule has an id that its violations name/).waitFor();
    await page.getByLabel('Name').fill('No shell');
    await page.getByLabel('Rules, one JSON object a line').fill('{"type": "tool_denylist", "tools": ["shell_*"]}');
    await page.getByRole('button', { name: 'Save evaluator' }).click();
    await page.getByText('Evaluator “No shell” saved').waitFor();
    await page.getByTestId('evaluators').getByRole('row').filter({ hasText: 'No shell' }).filter({ hasText: '1 rule: rule-1 (tool_denylist)' }).waitFor();
    const { evaluators } = await api<{ evaluators: { name: string; rules: { id: string }[] | null }[] }>(
      stack.observeUrl,
      stack.observeKey,
      'GET',
      '/api/evaluators',
    );
    assert.deepEqual(evaluators.find((e) => e.name === 'No shell')?.rules?.[0]?.id, 'rule-1');
    stack.noProblems();
  });
});
