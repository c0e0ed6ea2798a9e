/**
 * The dashboard's evaluation, advice and administration pages in a real browser (see
 * dashboard-harness.ts): a dataset created and run through the forms against a real agent webhook,
 * with and without an evaluator saved on the evaluators page; cost advice, insights, retention and
 * configuration, and storage statistics showing what the API answers, in figures people read.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { api, chromiumSkip, evalAgent, nav, seedObserve, settled, shot, signIn, startStack, type EventInput, type Stack } from './dashboard-harness.ts';

type Json = Record<string, unknown>;

/** Every control of the page has a label (a visible one or aria-label). */
async function assertLabelled(stack: Stack, path: string): Promise<void> {
  await settled(stack.page);
  assert.equal(await stack.page.locator('.error').count(), 0, `${path} shows an error: ${await stack.page.locator('.error').allInnerTexts()}`);
  const unlabelled = await stack.page.evaluate(() =>
    [...document.querySelectorAll('input, select, textarea')]
      .filter((el) => !(el as HTMLInputElement).labels?.length && !el.getAttribute('aria-label'))
      .map((el) => el.outerHTML.slice(0, 80)),
  );
  assert.deepEqual(unlabelled, [], `${path}: controls without a label`);
}

const cellsOf = async (row: ReturnType<Stack['page']['locator']>) => (await row.locator('th, td').allInnerTexts()).map((text) => text.trim());
const percent = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;

describe('dashboard in a real browser: evaluations, advice and administration', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  const agent = evalAgent(() => stack);

  before(async () => {
    stack = await startStack();
    await agent.start();
    await seedObserve(stack);
    // 30 gpt-4o calls of one agent at $0.03 each: enough (20+) for cost advice on a cheaper model.
    const start = Date.now() - 3_600_000;
    await api(stack.observeUrl, stack.observeKey, 'POST', '/api/events', {
      events: Array.from({ length: 30 }, (_, i) => ({
        sessionId: `writer-${i % 3}`,
        agentId: 'writer',
        timestamp: new Date(start + i * 1000).toISOString(),
        eventType: 'llm_response',
        payload: {
          callId: `w-${i}`,
          provider: 'openai',
          model: 'gpt-4o',
          completion: 'a draft',
          finishReason: 'stop',
          usage: { inputTokens: 1000, outputTokens: 100 },
          costUsd: 0.03,
          latencyMs: 800,
        },
      })),
    });
    // Sessions calling several tools in a row (one fails its fetch): tool sequences to find.
    await api(stack.observeUrl, stack.observeKey, 'POST', '/api/events', {
      events: Array.from({ length: 4 }, (_, n) =>
        ['search_docs', 'fetch_page', 'summarize'].flatMap((toolName, i): EventInput[] => {
          const base = { sessionId: `triage-${n}`, agentId: 'triage', timestamp: new Date(start + n * 60_000 + i * 1000).toISOString() };
          const failed = n === 0 && toolName === 'fetch_page';
          return [
            { ...base, eventType: 'tool_call', payload: { toolName, callId: `t${i}`, arguments: {} } },
            failed
              ? { ...base, eventType: 'tool_error', payload: { toolName, callId: `t${i}`, error: 'page gone', durationMs: 10 } }
              : { ...base, eventType: 'tool_response', payload: { toolName, callId: `t${i}`, result: 'ok', durationMs: 10 } },
          ];
        }),
      ).flat(),
    });
    await signIn(stack, { observe: stack.observeKey });
  });
  after(async () => {
    await stack?.close();
    await agent.stop();
  });

  test('evaluators saved on the evaluators page (rules, AI judge) are listed with their definition; one is deleted after confirming', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Evaluators' }).click();
    await page.getByRole('heading', { name: 'Evaluators', level: 1 }).waitFor();
    await page.getByRole('rowheader', { name: 'No payments without approval' }).waitFor();
    await assertLabelled(stack, '/evaluators');

    await page.getByLabel('Name', { exact: true }).fill('Careful tools');
    await page.getByLabel('Kind').selectOption('compliance');
    await page
      .getByLabel('Rules, one JSON object a line')
      .fill(
        [
          '{"id": "no-shell", "type": "tool_denylist", "tools": ["shell_*"]}',
          '{"id": "cheap", "type": "max_cost", "maxUsd": 1}',
          '{"id": "known-tools", "type": "tool_allowlist", "tools": ["lookup", "shell_exec"]}',
        ].join('\n'),
      );
    await page.getByLabel('Pass threshold (optional)').fill('0.9');
    await page.getByRole('button', { name: 'Save evaluator' }).click();
    await page.getByText('Evaluator “Careful tools” saved').waitFor();
    const row = page.getByTestId('evaluators').getByRole('row').filter({ hasText: 'Careful tools' });
    await row.waitFor(); // the list reloads after the save
    assert.deepEqual((await cellsOf(row)).slice(0, 4), [
      'Careful tools',
      'Rules (deterministic)',
      '3 rules: no-shell (tool_denylist), cheap (max_cost), known-tools (tool_allowlist)',
      '0.90',
    ]);
    const saved = await api<{ evaluators: { name: string; passThreshold: number | null }[] }>(stack.observeUrl, stack.observeKey, 'GET', '/api/evaluators');
    assert.equal(saved.evaluators.find((e) => e.name === 'Careful tools')?.passThreshold, 0.9);

    // An AI judge: a rubric and a priced model instead of rules.
    await page.getByLabel('Name', { exact: true }).fill('Polite answers');
    await page.getByLabel('Kind').selectOption({ label: 'AI judge (rubric)' });
    await page.getByLabel('Rubric').fill('The agent answers politely and cites the policy.');
    await page.getByLabel('Judge model (optional)').fill('gpt-4o-mini');
    await page.getByLabel('Pass threshold (optional)').fill('0.75');
    await page.getByRole('button', { name: 'Save evaluator' }).click();
    const judge = page.getByTestId('evaluators').getByRole('row').filter({ hasText: 'Polite answers' });
    await judge.waitFor();
    assert.deepEqual((await cellsOf(judge)).slice(0, 4), [
      'Polite answers',
      'AI judge (rubric)',
      'gpt-4o-mini: The agent answers politely and cites the policy.',
      '0.75',
    ]);

    // A rule that is not JSON is reported in words, and nothing is saved.
    await page.getByLabel('Kind').selectOption({ label: 'Rules (deterministic)' });
    await page.getByLabel('Name', { exact: true }).fill('Broken');
    await page.getByLabel('Rules, one JSON object a line').fill('{"id": "x", "type": "tool_denylist"');
    await page.getByRole('button', { name: 'Save evaluator' }).click();
    await page.getByText(/Line 1 is not valid JSON/).waitFor();
    await shot(page, 'evaluators');

    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete No payments without approval' }).click();
    await page.getByRole('rowheader', { name: 'No payments without approval' }).waitFor({ state: 'detached' });
    const left = await api<{ evaluators: { name: string }[] }>(stack.observeUrl, stack.observeKey, 'GET', '/api/evaluators');
    assert.deepEqual(left.evaluators.map((e) => e.name).sort(), ['Careful tools', 'Polite answers']);
    stack.noProblems();
  });

  test('a dataset created through the form runs against an agent webhook; each run shows every case with its verdict', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Datasets' }).click();
    await page.getByRole('heading', { name: 'Datasets', level: 1 }).waitFor();
    await page.getByText('No datasets yet.').waitFor();
    await assertLabelled(stack, '/datasets');
    await page.getByLabel('Name', { exact: true }).fill('Refund answers');
    await page
      .getByLabel('Cases, one JSON object a line')
      .fill(
        [
          '{"input": {"task": "lookup", "answer": "30 days"}, "expected": "30 days"}',
          '',
          '{"input": {"task": "shell", "answer": "14 days"}, "expected": "30 days"}',
        ].join('\n'),
      );
    await page.getByRole('button', { name: 'Create dataset' }).click();
    await page.getByRole('heading', { name: 'Refund answers', level: 1 }).waitFor();
    const cases = page.getByTestId('dataset-cases').locator('tbody tr');
    await cases.first().waitFor();
    assert.deepEqual(await cellsOf(cases.nth(0)), ['1', '{"answer":"30 days","task":"lookup"}', '"30 days"']);
    assert.deepEqual(await cellsOf(cases.nth(1)), ['2', '{"answer":"14 days","task":"shell"}', '"30 days"']);
    await assertLabelled(stack, '/datasets/:id');
    await shot(page, 'dataset');
    const datasetUrl = page.url();

    // Without an evaluator a case passes when its session has no error and the output equals expected.
    await page.getByLabel('Agent', { exact: true }).fill('eval-agent');
    await page.getByLabel('Agent webhook URL').fill(`${agent.url}/run`);
    await page.getByRole('button', { name: 'Run the dataset' }).click();
    await page.getByRole('heading', { name: 'Run of Refund answers' }).waitFor();
    await page.getByRole('region', { name: 'Outcome' }).locator('.badge', { hasText: 'completed' }).waitFor();
    assert.match(await page.locator('.stat').filter({ hasText: 'Passed' }).innerText(), /1 of 2\s+50\.0% of the cases run/);
    let rows = page.getByTestId('run-cases').locator('tbody tr');
    const firstRun = (await cellsOf(rows.nth(0))).concat(await cellsOf(rows.nth(1)));
    assert.deepEqual([firstRun[0], firstRun[1], firstRun[2], firstRun[4]], ['1', 'passed', '—', '']);
    assert.deepEqual([firstRun[5], firstRun[6], firstRun[7], firstRun[9]], ['2', 'failed', '—', 'the output does not equal expected']);
    assert.match(firstRun[3]!, /^eval-.+/);
    assert.equal(await page.getByText('evaluator: none (no error, output equals expected)').count(), 1);
    await assertLabelled(stack, '/runs/:id');

    // With the evaluator: scores with 2 decimals (the shell case breaks 1 of 3 rules: 0.67 < 0.9).
    await page.goto(datasetUrl);
    await page.getByLabel('Agent', { exact: true }).fill('eval-agent');
    await page.getByLabel('Agent webhook URL').fill(`${agent.url}/run`);
    await page.getByLabel('Evaluator').selectOption({ label: 'Careful tools (rules)' });
    await page.getByRole('button', { name: 'Run the dataset' }).click();
    await page.getByRole('heading', { name: 'Run of Refund answers' }).waitFor();
    await page.getByRole('region', { name: 'Outcome' }).locator('.badge', { hasText: 'completed' }).waitFor();
    await page.getByText('evaluator: Careful tools').waitFor();
    rows = page.getByTestId('run-cases').locator('tbody tr');
    const [first, second] = [await cellsOf(rows.nth(0)), await cellsOf(rows.nth(1))];
    assert.deepEqual(first.slice(0, 3), ['1', 'passed', '1.00']);
    assert.deepEqual(second.slice(0, 3), ['2', 'failed', '0.67']);
    const runId = page.url().split('/').pop()!;
    const run = await api<{ cases: { score: number | null; sessionId: string }[] }>(stack.observeUrl, stack.observeKey, 'GET', `/api/runs/${runId}`);
    assert.deepEqual(
      run.cases.map((c) => c.score?.toFixed(2)),
      ['1.00', '0.67'],
    );
    assert.equal(second[3], run.cases[1]!.sessionId);
    await shot(page, 'eval-run');

    // The dataset's page lists both runs, newest first, each linking to its run.
    await page.goto(datasetUrl);
    const runRows = page.getByTestId('dataset-runs').locator('tbody tr');
    await runRows.nth(1).waitFor();
    assert.deepEqual((await cellsOf(runRows.nth(0))).slice(1), ['eval-agent', 'completed', '1 / 2', '50.0%']);
    assert.deepEqual((await cellsOf(runRows.nth(1))).slice(1), ['eval-agent', 'completed', '1 / 2', '50.0%']);
    await runRows.nth(0).getByRole('link').click();
    await page.waitForURL(`**/runs/${runId}`);

    // A case's session opens from the run.
    await page.getByRole('link', { name: run.cases[1]!.sessionId }).click();
    await page.getByRole('heading', { name: `Session ${run.cases[1]!.sessionId}` }).waitFor();
    await page.goto('/datasets');
    const listed = page.getByTestId('datasets').getByRole('row').filter({ hasText: 'Refund answers' });
    await listed.waitFor();
    assert.deepEqual((await cellsOf(listed)).slice(0, 2), ['Refund answers', '2']);
    await shot(page, 'datasets');
    stack.noProblems();
  });

  test('cost advice shows the cheaper model, the change per call and the monthly savings the API estimates', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Cost advice' }).click();
    await page.getByRole('heading', { name: 'Cost advice', level: 1 }).waitFor();
    const advice = await api<{
      totalPotentialSavings: number;
      analyzedCalls: number;
      recommendations: {
        agentId: string;
        currentModel: string;
        recommendedModel: string;
        currentCostPerCall: number;
        recommendedCostPerCall: number;
        monthlySavings: number;
        callVolume: number;
      }[];
    }>(stack.observeUrl, stack.observeKey, 'GET', '/api/optimize/recommendations?period=7&limit=50');
    const writer = advice.recommendations.find((r) => r.agentId === 'writer');
    assert.ok(writer, JSON.stringify(advice));
    assert.equal(writer.currentModel, 'gpt-4o');
    const row = page
      .getByTestId('recommendations')
      .getByRole('row')
      .filter({ hasText: 'gpt-4o' })
      .filter({ has: page.getByRole('link', { name: 'writer' }) });
    await row.waitFor();
    const cells = await cellsOf(row);
    assert.equal(cells[2], 'gpt-4o');
    assert.equal(cells[3], writer.recommendedModel);
    // $0.03 a call now; the cheaper model costs well under a cent, so the change is -$0.03.
    assert.equal(cells[5], `-$${(writer.currentCostPerCall - writer.recommendedCostPerCall).toFixed(2)}`);
    assert.equal(cells[5], '-$0.03');
    assert.equal(cells[7], '30');
    assert.equal(cells[9], `$${writer.monthlySavings.toFixed(2)}`);
    const total = page.locator('.stat').filter({ hasText: 'Potential savings a month' });
    assert.match(await total.innerText(), new RegExp(`\\$${advice.totalPotentialSavings.toFixed(2).replace('.', '\\.')}`));
    assert.match(
      await page.locator('.stat').filter({ hasText: 'LLM calls analysed' }).innerText(),
      new RegExp(`${advice.analyzedCalls}\\s+in the last 7 days`),
    );
    await assertLabelled(stack, '/cost-advice');
    await shot(page, 'cost-advice');

    // One agent's advice: the filter goes into the URL and only its rows stay.
    await page.getByLabel('Agent').fill('writer');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/agent=writer/);
    await settled(page);
    const agents = await page.getByTestId('recommendations').locator('tbody tr td:first-child').allInnerTexts();
    assert.ok(agents.length > 0 && agents.every((a) => a === 'writer'), agents.join(', '));
    stack.noProblems();
  });

  test('insights show error patterns, tool sequences, spend by model and the performance trend as the API finds them', async () => {
    const { page } = stack;
    const reflect = (analysis: string) =>
      api<{ insights: { type: string; data: Json; confidence: number }[] }>(
        stack.observeUrl,
        stack.observeKey,
        'GET',
        `/api/reflect?analysis=${analysis}&limit=20`,
      );
    await nav(page).getByRole('link', { name: 'Insights' }).click();
    await page.getByRole('heading', { name: 'Insights', level: 1 }).waitFor();

    const errors = (await reflect('error_patterns')).insights;
    assert.ok(errors.length > 0);
    const top = errors[0]!;
    const errorRow = page.getByTestId('error-patterns').locator('tbody tr').first();
    await errorRow.waitFor();
    const errorCells = await cellsOf(errorRow);
    assert.equal(errorCells[0], top.data.pattern);
    assert.equal(errorCells[1], String(top.data.count));
    assert.equal(errorCells[4], (top.data.precedingTools as string[][])[0]!.join(' → '));
    assert.equal(errorCells[6], top.confidence.toFixed(2));
    await assertLabelled(stack, '/insights');
    await shot(page, 'insights');

    await page.getByLabel('Analysis').selectOption({ label: 'Tool sequences' });
    await page.waitForURL(/analysis=tool_sequences/);
    const sequences = (await reflect('tool_sequences')).insights;
    const sequenceRow = page.getByTestId('tool-sequences').locator('tbody tr').first();
    await sequenceRow.waitFor();
    const sequenceCells = await cellsOf(sequenceRow);
    assert.equal(sequenceCells[0], (sequences[0]!.data.tools as string[]).join(' → '));
    assert.equal(sequenceCells[3], percent(sequences[0]!.data.errorRate as number));

    await page.getByLabel('Analysis').selectOption({ label: 'Cost by model' });
    const gpt4o = page
      .getByTestId('model-costs')
      .getByRole('row')
      .filter({ has: page.getByRole('rowheader', { name: 'gpt-4o', exact: true }) });
    await gpt4o.waitFor();
    assert.deepEqual((await cellsOf(gpt4o)).slice(0, 4), ['gpt-4o', '30', '$0.90', '$0.03']);

    await page.getByLabel('Analysis').selectOption({ label: 'Performance trend' });
    const performance = (await reflect('performance_trends')).insights;
    const stats = performance.find((i) => i.type === 'performance_stats')!;
    const assessment = performance.find((i) => i.type === 'performance_assessment')!;
    await page.locator('.stat').filter({ hasText: 'Success rate' }).waitFor();
    assert.match(
      await page.locator('.stat').filter({ hasText: 'Success rate' }).innerText(),
      new RegExp(percent(stats.data.successRate as number).replace('.', '\\.')),
    );
    assert.match(
      await page.locator('.stat').filter({ hasText: 'Trend' }).innerText(),
      new RegExp(`${assessment.data.assessment as string}\\s+confidence ${assessment.confidence.toFixed(2)}`),
    );
    stack.noProblems();
  });

  test('retention and configuration: the settings as observe reports them; a new retention and a webhook secret are saved', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Retention and configuration' }).click();
    await page.getByRole('heading', { name: 'Retention and configuration', level: 1 }).waitFor();
    const stat = (label: string) => page.locator('.stat').filter({ hasText: label });
    await stat('Sessions kept').waitFor();
    assert.match(await stat('Sessions kept').innerText(), /kept forever/);
    assert.match(await stat('API keys').innerText(), /required/);
    assert.match(await stat('Approval gate webhook secret').innerText(), /not set/);
    assert.match(await stat('Agent memory').innerText(), /off/);
    const errorWeight = page.getByTestId('health-weights').getByRole('row').filter({ hasText: 'Error rate' });
    await errorWeight.waitFor();
    assert.deepEqual(await cellsOf(errorWeight), ['Error rate', '30%']);
    await assertLabelled(stack, '/settings');

    await page.getByLabel('Keep sessions for (days)').fill('45');
    await page.getByRole('button', { name: 'Save retention' }).click();
    await page.getByText('Saved: sessions are deleted 45 days after their last event.').waitFor();
    await stat('Sessions kept')
      .locator('.stat-value', { hasText: /^45 days$/ })
      .waitFor();
    assert.equal((await api<{ retentionDays: number }>(stack.observeUrl, stack.observeKey, 'GET', '/api/config')).retentionDays, 45);

    // A webhook secret is saved (and never shown), then cleared back to the environment's (none here).
    const gateSecret = () =>
      api<{ approvalGateSecretSet: boolean }>(stack.observeUrl, stack.observeKey, 'GET', '/api/config').then((c) => c.approvalGateSecretSet);
    await page.getByLabel('New approval gate webhook secret').fill('a-shared-secret-of-32-characters');
    await page.getByRole('button', { name: 'Save secret' }).first().click();
    await page.getByText('Approval gate webhook secret saved.').waitFor();
    await stat('Approval gate webhook secret').locator('.stat-value', { hasText: /^set$/ }).waitFor();
    assert.equal(await gateSecret(), true);
    assert.equal(await page.getByText('a-shared-secret-of-32-characters').count(), 0);
    await page.getByRole('button', { name: 'Clear the approval gate webhook secret' }).click();
    await page.getByText('Approval gate webhook secret cleared: APPROVAL_GATE_WEBHOOK_SECRET applies, if set.').waitFor();
    await stat('Approval gate webhook secret')
      .locator('.stat-value', { hasText: /^not set$/ })
      .waitFor();
    assert.equal(await gateSecret(), false);
    await shot(page, 'settings');
    stack.noProblems();
  });

  test('storage and spend: counts, database size and judge spend as /api/stats reports them', async () => {
    const { page } = stack;
    // The page's own answer: the database size (file + WAL) moves whenever the WAL is checkpointed,
    // so a second request may see another size than the one the page shows.
    const answered = page.waitForResponse((response) => new URL(response.url()).pathname.endsWith('/api/stats') && response.ok());
    await nav(page).getByRole('link', { name: 'Storage and spend' }).click();
    await page.getByRole('heading', { name: 'Storage and spend', level: 1 }).waitFor();
    const stats = (await (await answered).json()) as {
      totalEvents: number;
      totalSessions: number;
      totalAgents: number;
      storageSizeBytes: number;
      judgeSpendUsd: number;
    };
    const stat = (label: string) => page.locator('.stat').filter({ has: page.locator('.stat-label', { hasText: new RegExp(`^${label}$`) }) });
    await stat('Events').waitFor();
    const figure = async (label: string) => (await stat(label).locator('.stat-value').innerText()).trim();
    assert.equal(await figure('Events'), stats.totalEvents.toLocaleString('en-US'));
    assert.equal(await figure('Sessions'), stats.totalSessions.toLocaleString('en-US'));
    assert.equal(await figure('Agents'), stats.totalAgents.toLocaleString('en-US'));
    assert.equal(await figure('AI judge spend'), '$0');
    // SQLite files of a few hundred events: kilobytes or megabytes, one decimal, the exact bytes below.
    assert.match(await figure('Database size'), /^\d+(\.\d)? (KB|MB)$/);
    assert.match(await stat('Database size').innerText(), new RegExp(`${stats.storageSizeBytes.toLocaleString('en-US')} bytes`));
    assert.match(await figure('Newest event'), /ago|just now/);
    await assertLabelled(stack, '/stats');
    await shot(page, 'stats');
    stack.noProblems();
  });
});
