/**
 * The comparison views of issue 42 in a real browser (see dashboard-harness.ts): two sessions
 * picked on the Sessions list, or from a session's "Compare with…", side by side with their
 * events aligned and the cost and latency differences; a benchmark's variants on one chart with
 * its table; both views with axe-core at 1400 and 390 px in light and dark, and by keyboard.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import axe from 'axe-core';
import type { Page } from 'playwright-core';
import { api, chromiumSkip, seedObserve, settled, shot, signIn, startStack, type EventInput, type Stack, DESKTOP, PHONE } from './dashboard-harness.ts';

const AXE_SOURCE = axe.source;
const COMPARE = '/compare?a=cmp-a&b=cmp-b';

/**
 * Two runs of one agent: both search the web after an LLM call; A then looks up the CRM, B tries
 * a charge that fails and asks the model again. B's first LLM call is cheaper and slower.
 */
function comparedSessions(): EventInput[] {
  const start = Date.now() - 60_000;
  const at = (ms: number) => new Date(start + ms).toISOString();
  const run = (sessionId: string, steps: [number, string, Record<string, unknown>][]): EventInput[] =>
    steps.map(([ms, eventType, payload]) => ({ sessionId, agentId: 'comparer', eventType, timestamp: at(ms), payload }));
  const llm = (callId: string, model: string, cost: number, latency: number, tokens: [number, number]) => ({
    callId,
    model,
    provider: 'openai',
    completion: 'ok',
    finishReason: 'stop',
    costUsd: cost,
    latencyMs: latency,
    usage: { inputTokens: tokens[0], outputTokens: tokens[1] },
  });
  return [
    ...run('cmp-a', [
      [0, 'session_started', { agentName: 'Comparer' }],
      [100, 'llm_call', { callId: 'l1', provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'refund?' }] }],
      [1000, 'llm_response', llm('l1', 'gpt-4o-mini', 0.002, 900, [900, 120])],
      [1100, 'tool_call', { toolName: 'web_search', callId: 't1', arguments: { q: 'refund' } }],
      [1550, 'tool_response', { toolName: 'web_search', callId: 't1', result: 'policy', durationMs: 450 }],
      [1600, 'tool_call', { toolName: 'crm_lookup', callId: 't2', arguments: { id: 7 } }],
      [1800, 'tool_response', { toolName: 'crm_lookup', callId: 't2', result: 'customer', durationMs: 200 }],
      [3000, 'session_ended', { reason: 'completed' }],
    ]),
    ...run('cmp-b', [
      [0, 'session_started', { agentName: 'Comparer' }],
      [100, 'llm_call', { callId: 'l1', provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'refund?' }] }],
      [1600, 'llm_response', llm('l1', 'gpt-4o-mini', 0.0005, 1500, [500, 50])],
      [1700, 'tool_call', { toolName: 'web_search', callId: 't1', arguments: { q: 'refund' } }],
      [2000, 'tool_response', { toolName: 'web_search', callId: 't1', result: 'policy', durationMs: 300 }],
      [2100, 'tool_call', { toolName: 'stripe_charge', callId: 't2', arguments: { amount: 5 } }],
      [3300, 'tool_error', { toolName: 'stripe_charge', callId: 't2', error: 'card declined', durationMs: 1200 }],
      [3400, 'llm_call', { callId: 'l2', provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'declined' }] }],
      [3800, 'llm_response', llm('l2', 'gpt-4o-mini', 0.001, 400, [300, 30])],
      [5000, 'session_ended', { reason: 'completed' }],
    ]),
  ];
}

async function open(page: Page, path: string): Promise<void> {
  await page.goto(path);
  await page.locator('main h1').first().waitFor();
  await settled(page);
}

async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the dashboard's CSP (script-src 'self') refuses inline scripts.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    type AxeViolation = { id: string; impact: string | null; help: string; nodes: { target: string[] }[] };
    const axe = (window as unknown as { axe: { run: (context: Document, options: object) => Promise<{ violations: AxeViolation[] }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
}

const cells = async (page: Page, testId: string) =>
  page
    .getByTestId(testId)
    .locator('tbody tr')
    .evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('th, td')].map((cell) => (cell.textContent ?? '').replace(/\s+/g, ' ').trim())));

/** The compare checkbox of a session's row on the Sessions list. */
const pick = (page: Page, sessionId: string) =>
  page
    .getByRole('row')
    .filter({ has: page.getByRole('link', { name: sessionId, exact: true }) })
    .getByRole('checkbox', { name: 'Compare' });

/** What the compare page shows for cmp-a against cmp-b. */
async function assertComparison(page: Page): Promise<void> {
  await page.getByTestId('aligned-events').waitFor();
  await settled(page);
  assert.equal(await page.getByTestId('alignment-counts').innerText(), '6 steps in both, 2 steps only in A, 4 steps only in B.');
  const rows = await cells(page, 'aligned-events');
  const kinds = await page
    .getByTestId('aligned-events')
    .locator('tbody tr')
    .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-kind')));
  // The common start paired, A's CRM lookup and B's failed charge and second LLM round as gaps, the ends paired.
  assert.deepEqual(kinds, ['both', 'both', 'both', 'both', 'both', 'only-a', 'only-a', 'only-b', 'only-b', 'only-b', 'only-b', 'both']);
  assert.match(rows[2]![0]!, /^#\d+ llm_response gpt-4o-mini · \$0\.002 · 900 ms$/);
  assert.match(rows[2]![1]!, /^#\d+ llm_response gpt-4o-mini · \$0\.0005 · 1\.50 s$/);
  assert.deepEqual(rows[2]!.slice(2), ['-$0.0015', '+600 ms'], 'the LLM response pair: B is $0.0015 cheaper and 600 ms slower');
  assert.deepEqual(rows[4]!.slice(2), ['', '-150 ms'], 'the web search: B 150 ms faster, no cost');
  assert.match(rows[5]![0]!, /crm_lookup/);
  assert.equal(rows[5]![1], 'not in B');
  assert.equal(rows[8]![0], 'not in A');
  assert.match(rows[8]![1]!, /^#\d+ tool_error stripe_charge · 1\.20 s error$/);

  const totals = Object.fromEntries((await cells(page, 'compare-totals')).map(([figure, ...rest]) => [figure, rest]));
  assert.deepEqual(totals.Duration, ['3.00 s', '5.00 s', '+2.00 s']);
  assert.deepEqual(totals.Cost, ['$0.002', '$0.0015', '-$0.0005']);
  assert.deepEqual(totals.Tokens, ['1,020', '880', '-140']);
  assert.deepEqual(totals.Events, ['8', '10', '+2']);
  assert.deepEqual(totals.Errors, ['0', '1', '+1']);
  assert.deepEqual(totals['Tool calls'], ['2', '2', '0']);
  assert.deepEqual(totals['Time in LLM calls and tools'], ['1.55 s', '3.40 s', '+1.85 s']);

  // Only the differences: the paired steps that cost and take the same are left out.
  await page.getByLabel('Show').selectOption('differences');
  const kindsOnly = await page
    .getByTestId('aligned-events')
    .locator('tbody tr')
    .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-kind')));
  assert.deepEqual(kindsOnly, ['both', 'both', 'only-a', 'only-a', 'only-b', 'only-b', 'only-b', 'only-b']);
}

describe('dashboard in a real browser: comparison views', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  let benchmark: string;
  before(async () => {
    stack = await startStack();
    await seedObserve(stack);
    await api(stack.observeUrl, stack.observeKey, 'POST', '/api/events', { events: comparedSessions() });
    const { benchmarks } = await api<{ benchmarks: { id: string }[] }>(stack.observeUrl, stack.observeKey, 'GET', '/api/benchmarks');
    benchmark = `/benchmarks/${benchmarks[0]!.id}`;
    await signIn(stack, { observe: stack.observeKey });
  });
  after(() => stack?.close());

  test('two sessions picked on the Sessions list open side by side: events aligned, cost and latency differences per step and in total', async () => {
    const { page } = stack;
    await page.setViewportSize(DESKTOP);
    await open(page, '/sessions');
    await pick(page, 'cmp-a').check();
    await page.getByText('Pick two sessions to compare them (one picked)').waitFor();
    await pick(page, 'cmp-b').check();
    await page.getByRole('link', { name: 'Compare the two picked sessions' }).click();
    await page.waitForURL((url) => url.pathname === '/compare' && url.searchParams.get('a') === 'cmp-a' && url.searchParams.get('b') === 'cmp-b');
    await assertComparison(page);
    await page.getByLabel('Show').selectOption('all');
    await shot(page, 'compare');
    stack.noProblems();
  });

  test('"Compare with…" on a session page asks for the other session, then compares', async () => {
    const { page } = stack;
    await open(page, '/sessions/cmp-a');
    await page.getByRole('link', { name: 'Compare with…' }).click();
    await page.getByRole('heading', { name: 'Compare sessions', level: 1 }).waitFor();
    assert.equal(await page.getByLabel('Session A').inputValue(), 'cmp-a');
    await page.getByLabel('Session B').fill('cmp-b');
    await page.getByRole('button', { name: 'Compare', exact: true }).click();
    await assertComparison(page);
    stack.noProblems();
  });

  test("a benchmark's variants are on one chart, the chart's figures also in a table", async () => {
    const { page } = stack;
    await open(page, benchmark);
    const chart = page.getByTestId('variants-chart');
    await chart.locator('canvas[role="img"]').waitFor();
    assert.equal(await chart.locator('canvas').count(), 1, 'one chart for every variant');
    const results = await api<{ variants: { variantName: string; metrics: Record<string, { mean: number; count: number }> }[] }>(
      stack.observeUrl,
      stack.observeKey,
      'GET',
      `/api/benchmarks/${benchmark.split('/').pop()}/results`,
    );
    const percent = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;
    for (const metric of ['error_rate', 'avg_cost']) {
      if (metric === 'avg_cost') await page.getByLabel('Metric').selectOption(metric);
      const label = await chart.locator('canvas').getAttribute('aria-label');
      const rows = await chart.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('th, td')].map((c) => c.textContent ?? '')));
      assert.deepEqual(
        rows.map((r) => r[0]),
        ['v1', 'v2'],
      );
      for (const [i, variant] of results.variants.entries()) {
        const stats = variant.metrics[metric]!;
        const mean = metric === 'error_rate' ? percent(stats.mean) : `$${stats.mean.toLocaleString('en-US', { maximumSignificantDigits: 2 })}`;
        assert.equal(rows[i]![2], mean, `${variant.variantName}'s mean of ${metric}`);
        assert.match(rows[i]![3]!, / … /, 'with its 95% interval');
        assert.ok(label?.includes(`${variant.variantName}: ${mean} (95% interval`), `the chart's description names ${variant.variantName}: ${label}`);
      }
    }
    await page.getByLabel('Metric').selectOption('error_rate');
    await shot(page, 'benchmark-variants');
    stack.noProblems();
  });

  test('the keyboard reaches the comparison: a session picked with Space, the compare link followed with Enter, the aligned table scrolled', async () => {
    const { page } = stack;
    await open(page, '/sessions');
    const tabTo = async (match: (el: { label: string | null; describedBy: string | null; cls: string }) => boolean) => {
      for (let i = 0; i < 300; i += 1) {
        await page.keyboard.press('Tab');
        const el = await page.evaluate(() => {
          const a = document.activeElement as HTMLElement;
          return { label: a.getAttribute('aria-label'), describedBy: a.getAttribute('aria-describedby'), cls: a.className };
        });
        if (match(el)) return;
      }
      assert.fail('not reached by Tab');
    };
    await tabTo((el) => el.label === 'Compare' && el.describedBy === 'compare-cmp-a');
    await page.keyboard.press('Space');
    await tabTo((el) => el.label === 'Compare' && el.describedBy === 'compare-cmp-b');
    await page.keyboard.press('Space');
    await page.getByRole('link', { name: 'Compare the two picked sessions' }).focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('aligned-events').waitFor();
    await tabTo((el) => el.cls === 'table-scroll');
    stack.noProblems();
  });

  for (const scheme of ['light', 'dark'] as const) {
    for (const viewport of [DESKTOP, PHONE]) {
      test(`the comparison views at ${viewport.width} px, ${scheme}: no serious or critical axe violation, nothing wider than the screen`, async () => {
        const { page } = stack;
        await page.setViewportSize(viewport);
        await page.evaluate((theme) => localStorage.setItem('vigil.theme', theme), scheme);
        const found: string[] = [];
        for (const path of [COMPARE, '/compare', benchmark]) {
          await open(page, path);
          assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), scheme);
          const width = await page.evaluate(() => document.documentElement.scrollWidth);
          assert.ok(width <= viewport.width, `${path} is ${width} px wide at ${viewport.width} px`);
          // Named as the console test names its pictures: -dark at 1400 px, -phone at 390 px in light.
          const suffix = scheme === 'dark' && viewport === DESKTOP ? '-dark' : scheme === 'light' && viewport === PHONE ? '-phone' : null;
          if (path !== '/compare' && suffix) await shot(page, `${path === COMPARE ? 'compare' : 'benchmark-variants'}${suffix}`);
          for (const violation of await seriousViolations(page)) found.push(`${path}: ${violation}`);
        }
        assert.deepEqual(found, [], 'no serious or critical accessibility violation');
        stack.noProblems();
      });
    }
  }
});
