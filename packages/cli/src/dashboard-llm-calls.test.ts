/**
 * Issue 42's figures explained, in a real browser (see dashboard-harness.ts): the LLM calls page
 * lists the calls themselves, filtered and sorted, each opening its prompt, completion, tokens,
 * cost and the price used; a dataset run's failed case shows input, expected, what the agent
 * answered and the evaluator's reasoning. axe-core on each view at 1400 and 390 px, light and dark.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import {
  api,
  chromiumSkip,
  evalAgent,
  seedObserve,
  seriousViolations,
  settled,
  shot,
  signIn,
  startStack,
  type EventInput,
  type Stack,
  DESKTOP,
  PHONE,
} from './dashboard-harness.ts';

/** The cells of the list's rows, as text. */
async function rows(page: Page): Promise<string[][]> {
  await settled(page);
  return page
    .getByTestId('llm-calls')
    .locator('tbody tr')
    .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('th, td')].map((cell) => (cell.textContent ?? '').trim())));
}
/** Column indexes of the list (CALL_COLUMNS). */
const MODEL = 1;
const AGENT = 2;
const STATUS = 3;
const COST = 5;
const SESSION = 7;

describe('dashboard in a real browser: LLM calls and failed cases', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  let runId = '';
  const agent = evalAgent(() => stack);

  before(async () => {
    stack = await startStack();
    await agent.start();
    // 60 gpt-4o-mini calls of three agents, then two gpt-4o calls: the priciest one, and a failed one.
    await seedObserve(stack);
    const at = (msAgo: number) => new Date(Date.now() - msAgo).toISOString();
    const exchange = (
      sessionId: string,
      agentId: string,
      n: number,
      o: { cost: number; latency: number; tokens: [number, number]; error?: boolean },
    ): EventInput[] => [
      {
        sessionId,
        agentId,
        eventType: 'llm_call',
        timestamp: at(60_000 - n),
        payload: {
          callId: `big-${n}`,
          provider: 'openai',
          model: 'gpt-4o',
          systemPrompt: 'You write release notes.',
          messages: [{ role: 'user', content: `Summarise release ${n}` }],
        },
      },
      {
        sessionId,
        agentId,
        eventType: 'llm_response',
        timestamp: at(50_000 - n),
        ...(o.error && { severity: 'error' }),
        payload: {
          callId: `big-${n}`,
          provider: 'openai',
          model: 'gpt-4o',
          completion: o.error ? 'rate limited' : `Release ${n} fixes three bugs.`,
          finishReason: o.error ? 'error' : 'stop',
          usage: { inputTokens: o.tokens[0], outputTokens: o.tokens[1] },
          costUsd: o.cost,
          latencyMs: o.latency,
        },
      },
    ];
    await api(stack.observeUrl, stack.observeKey, 'POST', '/api/events', {
      events: [
        ...exchange('notes-1', 'writer', 1, { cost: 0.0095, latency: 4200, tokens: [3000, 200] }),
        ...exchange('notes-2', 'writer', 2, { cost: 0.0001, latency: 300, tokens: [20, 5], error: true }),
      ],
    });
    // A dataset run: case 1 answers as expected, case 2 calls a shell the evaluator forbids and answers otherwise.
    const evaluator = await api<{ id: string }>(stack.observeUrl, stack.observeKey, 'POST', '/api/evaluators', {
      name: 'No shell',
      kind: 'compliance',
      rules: [{ id: 'no-shell', type: 'tool_denylist', tools: ['shell_*'] }],
    });
    const dataset = await api<{ id: string }>(stack.observeUrl, stack.observeKey, 'POST', '/api/datasets', {
      name: 'Release questions',
      cases: [
        { input: { task: 'ok', answer: '30 days' }, expected: '30 days' },
        { input: { task: 'shell', answer: 'deleted the logs' }, expected: 'the logs are kept 90 days' },
      ],
    });
    runId = (
      await api<{ id: string }>(stack.observeUrl, stack.observeKey, 'POST', `/api/datasets/${dataset.id}/runs`, {
        agentId: 'eval-agent',
        webhookUrl: `${agent.url}/run`,
        evaluatorId: evaluator.id,
      })
    ).id;
    const deadline = Date.now() + 20_000;
    while ((await api<{ status: string }>(stack.observeUrl, stack.observeKey, 'GET', `/api/runs/${runId}`)).status !== 'completed') {
      assert.ok(Date.now() < deadline, 'the run completes');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await signIn(stack, { observe: stack.observeKey });
  });
  after(async () => {
    await stack?.close();
    await agent.stop();
  });

  test('the LLM calls page lists the calls, filters and sorts them, and pages through them', async () => {
    const { page } = stack;
    await page.setViewportSize(DESKTOP);
    await page.goto('/llm');
    await page.getByRole('heading', { name: 'Calls', exact: true }).waitFor();
    const newest = await rows(page);
    assert.equal(newest.length, 25, 'a page of 25 of the 62 calls');
    assert.deepEqual(
      newest.slice(0, 2).map((r) => [r[MODEL], r[AGENT], r[SESSION]]),
      [
        ['gpt-4o', 'writer', 'notes-2'],
        ['gpt-4o', 'writer', 'notes-1'],
      ],
    );
    await shot(page, 'llm-calls');

    // Older pages, then back.
    await page.getByRole('button', { name: 'Older →' }).click();
    await page.getByRole('button', { name: '← Newer' }).and(page.locator(':enabled')).waitFor();
    const second = await rows(page);
    assert.equal(second.length, 25);
    assert.ok(!second.some((r) => r[SESSION] === 'notes-1'), 'the second page holds other calls');
    await page.getByRole('button', { name: 'Older →' }).click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="llm-calls"] tbody tr').length === 12);
    await page.getByRole('button', { name: '← Newer' }).click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="llm-calls"] tbody tr').length === 25);

    // Filters: the model, then errors only; the URL keeps them.
    await page.getByLabel('Model', { exact: true }).fill('gpt-4o');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/model=gpt-4o/);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="llm-calls"] tbody tr').length === 2);
    await page.getByLabel('Status').selectOption('error');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="llm-calls"] tbody tr').length === 1);
    assert.deepEqual(
      (await rows(page)).map((r) => [r[SESSION], r[STATUS]]),
      [['notes-2', 'error']],
    );
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="llm-calls"] tbody tr').length === 25);

    // Sorts: the priciest call first, then the cheapest.
    await page.getByLabel('Sort').selectOption('cost-desc');
    await page.waitForURL(/order=cost-desc/);
    await page.waitForFunction(() => document.querySelector('[data-testid="llm-calls"] tbody tr td:last-child')?.textContent === 'notes-1');
    assert.equal((await rows(page))[0]![COST], '$0.0095');
    await page.getByLabel('Sort').selectOption('cost-asc');
    await page.waitForFunction(() => document.querySelector('[data-testid="llm-calls"] tbody tr td:last-child')?.textContent === 'notes-2');
    const cheapest = await rows(page);
    const costs = cheapest.map((r) => Number(r[COST]!.replace('$', '')));
    assert.deepEqual(
      costs,
      [...costs].sort((a, b) => a - b),
      'ascending cost',
    );
    stack.noProblems();
  });

  test('a row opens the call: prompt, completion, tokens, cost and the price used', async () => {
    const { page } = stack;
    await page.setViewportSize(DESKTOP);
    await page.goto('/llm?order=cost-desc');
    await page.waitForFunction(() => document.querySelector('[data-testid="llm-calls"] tbody tr td:last-child')?.textContent === 'notes-1');
    await page.getByTestId('llm-calls').locator('tbody tr').first().getByRole('link').first().click();
    await page.getByRole('heading', { name: 'LLM call', level: 1 }).waitFor();
    await settled(page);
    const prompt = await page.getByTestId('llm-call-prompt').innerText();
    assert.match(prompt, /You write release notes\./);
    assert.match(prompt, /Summarise release 1/);
    assert.match(await page.getByTestId('llm-call-completion').innerText(), /Release 1 fixes three bugs\./);
    const figures = await page.locator('.stat').allInnerTexts();
    assert.ok(
      figures.some((f) => /Cost\s*\$0\.0095/.test(f)),
      figures.join(' | '),
    );
    assert.ok(
      figures.some((f) => /Tokens\s*3,200\s*3,000 in, 200 out/.test(f)),
      figures.join(' | '),
    );
    assert.ok(
      figures.some((f) => /Latency\s*4\.20 s/.test(f)),
      figures.join(' | '),
    );
    const price = await page.getByTestId('llm-call-price').innerText();
    assert.match(price, /openai\/gpt-4o/);
    assert.match(price, /\$2\.50 per 1M tokens/);
    assert.match(price, /\$10\.00 per 1M tokens/);
    // 3,000 × $2.50 / 1M + 200 × $10 / 1M
    assert.match(price, /\$0\.0095 for 3,000 input and 200 output tokens/);
    assert.match(price, /https:\/\/openai\.com\/api\/pricing\/, as of \d{4}-\d{2}-\d{2}/);
    await shot(page, 'llm-call');
    stack.noProblems();
  });

  test("a run's failed case shows its input, expected, what the agent answered and the evaluator's reasoning", async () => {
    const { page } = stack;
    await page.setViewportSize(DESKTOP);
    const run = await api<{ cases: { index: number; passed: boolean; reasoning: string | null }[] }>(
      stack.observeUrl,
      stack.observeKey,
      'GET',
      `/api/runs/${runId}`,
    );
    const reasoning = run.cases.find((c) => !c.passed)?.reasoning;
    assert.ok(reasoning, 'the evaluator gave its reasoning');
    await page.goto(`/runs/${runId}`);
    await page.getByRole('heading', { name: 'Failed cases' }).waitFor();
    const failed = page.getByTestId('failed-case');
    assert.equal(await failed.count(), 1, 'only the failed case');
    // The run and its dataset load apart: until the dataset's cases come, the case says so.
    await failed.getByText('loading…').first().waitFor({ state: 'detached' });
    const text = await failed.innerText();
    assert.doesNotMatch(text, /deleted from the dataset/);
    assert.match(text, /Case 2/);
    // Stored as canonical JSON: keys in order.
    assert.match(text, /Input\s*\{\s*"answer": "deleted the logs",\s*"task": "shell"\s*\}/);
    assert.match(text, /Expected\s*"the logs are kept 90 days"/);
    assert.match(text, /Actual\s*"deleted the logs"/);
    assert.ok(text.includes(reasoning), `the reasoning "${reasoning}" is shown`);
    await shot(page, 'eval-run-failed');
    stack.noProblems();
  });

  test('the new views pass axe-core and fit the screen at 1400 and 390 px, light and dark', async () => {
    const { page } = stack;
    const { calls } = await api<{ calls: { id: string }[] }>(stack.observeUrl, stack.observeKey, 'GET', '/api/llm-calls?sort=cost&limit=1');
    const views = ['/llm', `/llm/calls/${calls[0]!.id}`, `/runs/${runId}`];
    const found: string[] = [];
    for (const scheme of ['light', 'dark'] as const) {
      await page.evaluate((theme) => localStorage.setItem('vigil.theme', theme), scheme);
      for (const viewport of [DESKTOP, PHONE]) {
        await page.setViewportSize(viewport);
        for (const path of views) {
          await page.goto(path);
          await page.locator('main h1').first().waitFor();
          await page.locator('main section').nth(1).waitFor();
          await settled(page);
          assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), scheme);
          const width = await page.evaluate(() => document.documentElement.scrollWidth);
          if (width > viewport.width) found.push(`${path} at ${viewport.width} px, ${scheme}: ${width} px wide`);
          for (const violation of await seriousViolations(page)) found.push(`${path} at ${viewport.width} px, ${scheme}: ${violation}`);
          if (viewport === PHONE && scheme === 'dark' && path === '/llm') await shot(page, 'llm-calls-phone-dark');
        }
      }
    }
    await page.evaluate(() => localStorage.removeItem('vigil.theme'));
    assert.deepEqual(found, [], 'no serious or critical violation, no page wider than the screen');
    stack.noProblems();
  });
});
