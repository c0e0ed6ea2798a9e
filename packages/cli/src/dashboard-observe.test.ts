/**
 * The dashboard's observe pages in a real browser (see dashboard-harness.ts): sign-in, a session
 * ingested through the API appearing by itself, its timeline, evaluation and replay, a tampered
 * event reported as a broken chain, and every other observe page without console errors.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { ADMIN_KEY, api, chromiumSkip, nav, seedGate, seedObserve, session, settled, shot, startStack, type Stack } from './dashboard-harness.ts';

describe('dashboard in a real browser: observe', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
    await seedObserve(stack);
    await seedGate(stack);
  });
  after(() => stack?.close());

  test('signs in with a key of each service; only a dashboard session token of the gate is kept', async () => {
    const { page } = stack;
    await page.goto('/sessions');
    await page.getByRole('heading', { name: 'Sign in to Vigil' }).waitFor();
    await shot(page, 'sign-in');
    // A wrong key is refused in words.
    await page.getByLabel('Your name').fill('Ada');
    await page.getByLabel('Observe API key').fill('vgl_wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Observe did not accept this API key.').waitFor();
    stack.problems.splice(0); // the browser logs the refused request (401) as a console error: expected here

    await page.getByLabel('Observe API key').fill(stack.observeKey);
    await page.getByLabel('Gate API key').fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    assert.match(await page.locator('.whoami').innerText(), /Deciding as dashboard:Ada/);

    const stored = await page.evaluate(() => sessionStorage.getItem('vigil.credentials') ?? '');
    assert.match(stored, /"token":"gds_/);
    assert.ok(!stored.includes(ADMIN_KEY), 'the gate key itself is not stored');
    assert.equal(await page.evaluate(() => localStorage.getItem('vigil.credentials')), null);

    // The overview draws its charts from /api/analytics.
    await page.locator('canvas[role="img"]').first().waitFor();
    await page.getByRole('cell', { name: 'crm_lookup' }).waitFor();
    await shot(page, 'overview');
    stack.noProblems();
  });

  test('a session ingested through the API appears by itself; its timeline, evaluation and replay work', async () => {
    const { page } = stack;
    await nav(page).getByRole('link', { name: 'Sessions' }).click();
    await page.getByRole('heading', { name: 'Sessions', level: 1 }).waitFor();
    await page.locator('main table tbody tr').first().waitFor();
    assert.equal(await page.getByRole('link', { name: 'checkout-42' }).count(), 0);

    await api(stack.observeUrl, stack.observeKey, 'POST', '/api/events', {
      events: session('checkout-42', 'billing-agent', 'Billing agent', 60_000, { tags: ['prod', 'checkout'], tool: 'stripe_charge' }),
    });
    await page.getByRole('link', { name: 'checkout-42' }).waitFor(); // no reload: the list follows the event stream
    await shot(page, 'sessions');

    await page.getByRole('link', { name: 'checkout-42' }).click();
    await page.getByRole('heading', { name: 'Session checkout-42' }).waitFor();
    await page.getByText('Hash chain valid.').waitFor();
    assert.match(await page.getByTestId('chain-status').innerText(), /All 6 events verified/);
    // The audit bundle downloads beside the verdict, and verifies offline with the CLI.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download audit bundle' }).click()]);
    assert.equal(download.suggestedFilename(), 'checkout-42.audit-bundle.json');
    const bundleFile = await download.path();
    const bundle = JSON.parse(readFileSync(bundleFile, 'utf8')) as { format: string; sessionId: string; events: string[] };
    assert.deepEqual([bundle.format, bundle.sessionId, bundle.events.length], ['vigil-audit-bundle/1', 'checkout-42', 6]);
    // Against the service's key, as an auditor pins it: a bundle's own key proves nothing (exit 3).
    const { publicKey } = await api<{ publicKey: string }>(stack.observeUrl, stack.observeKey, 'GET', '/api/audit/public-key');
    const verified = spawnSync(
      process.execPath,
      [fileURLToPath(new URL('../bin/vigil.mjs', import.meta.url)), 'verify', bundleFile, '--public-key', publicKey],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(verified.status, 0, verified.stdout + verified.stderr);
    assert.match(verified.stdout, /VALID/);
    assert.equal(await page.getByTestId('timeline-event').count(), 6);
    // A payload opens with the keyboard.
    await page
      .getByTestId('timeline-event')
      .filter({ has: page.locator('.badge', { hasText: /^tool_call$/ }) })
      .locator('summary')
      .focus();
    await page.keyboard.press('Enter');
    assert.match(await page.getByLabel('Payload of event 3').innerText(), /refund policy checkout-42/);

    // An evaluation run from the page is chained into the session and shown.
    await page.getByLabel('Saved evaluator').selectOption({ label: 'No payments without approval (rules)' });
    await page.getByRole('button', { name: 'Evaluate this session' }).click();
    await page.getByText(/No payments without approval: failed/).waitFor();
    await page.getByText('Deterministic compliance check').waitFor();
    await page.getByText('All 7 events verified').waitFor();
    await shot(page, 'session');

    await page.getByRole('link', { name: 'Replay step by step' }).click();
    await page.getByRole('heading', { name: 'Replay of checkout-42' }).waitFor();
    await page.getByText('Step 1: session_started').waitFor();
    await page.getByRole('button', { name: 'Next step' }).click();
    await page.getByRole('button', { name: 'Next step' }).click();
    await page.getByText('Step 3: llm_response').waitFor();
    assert.equal(await page.getByTestId('replay-position').innerText(), '3');
    // The reconstructed context: what the model was asked, and the paired call.
    await page.getByText('Find the refund policy for order checkout-42').waitFor();
    await page.getByText('Paired with').waitFor();
    // Arrow keys, Home and End step too.
    await page.getByRole('button', { name: 'Next step' }).focus();
    await page.keyboard.press('ArrowRight');
    await page.getByText('Step 4: tool_call').waitFor();
    await page.keyboard.press('End');
    await page.getByText('Step 7: eval_result').waitFor();
    await page.getByRole('button', { name: 'Previous step' }).click();
    await page.getByText('Step 6: session_ended').waitFor();
    await page.getByRole('cell', { name: 'stripe_charge' }).first().waitFor();
    await shot(page, 'replay');
    stack.noProblems();
  });

  test('the session list and a session page follow the event stream (a stream token, no key in the URL), not polling', async () => {
    const { page } = stack;
    const streams: string[] = [];
    const onRequest = (request: { url(): string }) => {
      if (request.url().includes('/api/stream?')) streams.push(request.url());
    };
    page.on('request', onRequest);
    const [first, ...rest] = session('live-7', 'support-bot', 'Support bot', 30_000);
    await api(stack.observeUrl, stack.observeKey, 'POST', '/api/events', { events: [first] });
    // The stream opens without a cursor, after the page's first reads: what commits before it is open is not streamed.
    const streamOpen = page.waitForResponse((response) => /\/api\/stream\?sessionId=live-7&/.test(response.url()));
    await page.goto('/sessions/live-7');
    await page.getByRole('heading', { name: 'Session live-7' }).waitFor();
    await page.getByTestId('timeline-event').first().waitFor();
    assert.equal((await streamOpen).status(), 200);

    // Committed after the page loaded: the timeline, the counters and the chain check follow by themselves.
    await api(stack.observeUrl, stack.observeKey, 'POST', '/api/events', { events: rest });
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="timeline-event"]').length === 6);
    await page.getByText('All 6 events verified').waitFor();
    assert.ok(
      streams.some((url) => /\/api\/stream\?sessionId=live-7&token=vst_/.test(url)),
      streams.join('\n'),
    );

    const listStream = page.waitForRequest(/\/api\/stream\?include=sessions&token=vst_/);
    await nav(page).getByRole('link', { name: 'Sessions' }).click();
    await listStream;
    await page.getByText(/Live updates/).waitFor();
    assert.ok(!streams.some((url) => url.includes(stack.observeKey)), 'the API key never goes in a URL');
    page.off('request', onRequest);
    stack.noProblems();
  });

  test('an event altered in the database is reported as a broken chain at its step', async () => {
    const { page } = stack;
    const { db } = stack.observe.context.database;
    const target = await db
      .selectFrom('events')
      .select(['id', 'payload'])
      .where('session_id', '=', 'checkout-42')
      .where('seq', '=', 3)
      .executeTakeFirstOrThrow();
    const payload = JSON.parse(target.payload) as Record<string, unknown>;
    await db
      .updateTable('events')
      .set({ payload: JSON.stringify({ ...payload, arguments: { q: 'refund everything' } }) })
      .where('id', '=', target.id)
      .execute();

    await page.goto('/sessions/checkout-42');
    await page.getByText('Hash chain broken at step 3.').waitFor();
    assert.match(await page.getByTestId('chain-status').innerText(), /hash does not match the event content/);
    await page.locator('li.broken').getByText('chain broken here').waitFor();
    await shot(page, 'session-tampered');
    stack.noProblems();
  });

  test('the LLM page shows cost, tokens and latency percentiles per model; the overview shows tool latency percentiles', async () => {
    const { page, observeUrl, observeKey } = stack;
    // A second model with spread latencies (100 … 2,050 ms), so the percentiles differ.
    const latencies = Array.from({ length: 40 }, (_, i) => 100 + i * 50);
    const start = Date.now() - 2 * 3_600_000;
    await api(observeUrl, observeKey, 'POST', '/api/events', {
      events: latencies.map((latencyMs, i) => ({
        sessionId: 'llm-latency-1',
        agentId: 'researcher',
        timestamp: new Date(start + i * 1000).toISOString(),
        eventType: 'llm_response',
        payload: {
          callId: `lat-${i}`,
          provider: 'anthropic',
          model: 'claude-sonnet-4',
          completion: 'ok',
          finishReason: 'stop',
          usage: { inputTokens: 1000, outputTokens: 100 },
          costUsd: 0.01,
          latencyMs,
        },
      })),
    });
    await page.goto('/');
    await nav(page).getByRole('link', { name: 'LLM calls' }).click();
    await page.getByRole('heading', { name: 'LLM calls', level: 1 }).waitFor();
    const row = page.getByTestId('llm-models').getByRole('row').filter({ hasText: 'claude-sonnet-4' });
    await row.waitFor();
    const cells = (await row.getByRole('cell').allInnerTexts()).map((t) => t.trim());
    // Provider, model, calls, spend, input, output, avg, p50, p95, p99; the exact percentiles
    // interpolate the sorted latencies at rank q·(n−1), and the page shows the sketch's, within 1 %, in whole ms.
    assert.deepEqual(cells.slice(0, 6), ['anthropic', 'claude-sonnet-4', '40', '$0.40', '40,000', '4,000']);
    const ms = (text: string) => Number(text.replace(/[^0-9.]/g, '')) * (text.endsWith(' s') ? 1000 : 1);
    for (const [cell, q] of [
      [cells[7]!, 0.5],
      [cells[8]!, 0.95],
      [cells[9]!, 0.99],
    ] as const) {
      const rank = q * (latencies.length - 1);
      const below = latencies[Math.floor(rank)]!;
      const exact = below + (rank - Math.floor(rank)) * ((latencies[Math.ceil(rank)] ?? below) - below);
      assert.ok(Math.abs(ms(cell) - exact) <= exact * 0.01 + 10, `p${q * 100}: ${cell} vs exact ${exact}`);
    }
    const mini = (await page.getByTestId('llm-models').getByRole('row').filter({ hasText: 'gpt-4o-mini' }).getByRole('cell').allInnerTexts()).map((t) =>
      t.trim(),
    );
    assert.ok(
      mini.slice(7).every((cell) => Math.abs(ms(cell) - 900) <= 9),
      `every seeded gpt-4o-mini call took 900 ms: ${mini.join(' | ')}`,
    );
    assert.equal(await page.locator('.error').count(), 0);
    await shot(page, 'llm');
    await page.goto('/');
    const stat = page.locator('.stat').filter({ hasText: 'Tool latency p50 / p95 / p99' });
    await stat.waitFor();
    // The seeded tools took 450 ms (answered) or 1,200 ms (failed).
    assert.match(await stat.innerText(), /\d+ ms \/ (\d+ ms|1\.\d\d s) \/ (\d+ ms|1\.\d\d s)/);
    stack.noProblems();
  });

  test('agents, alerts, benchmarks, guardrails and recall load their data, with labelled controls; an agent pauses and resumes', async () => {
    const { page } = stack;
    for (const [path, heading, name] of [
      ['/agents', 'Agents', 'agents'],
      ['/agents/support-bot', 'Support bot', 'agent'],
      ['/alerts', 'Alerts', 'alerts'],
      ['/benchmarks', 'Benchmarks', null],
      ['/guardrails', 'Guardrails', 'guardrails'],
      ['/recall', 'Recall search', null],
    ] as const) {
      await page.goto(path);
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      await settled(page);
      assert.equal(await page.locator('.error').count(), 0, `${path} shows an error: ${await page.locator('.error').allInnerTexts()}`);
      const unlabelled = await page.evaluate(() =>
        [...document.querySelectorAll('input, select, textarea')]
          .filter((el) => !(el as HTMLInputElement).labels?.length && !el.getAttribute('aria-label'))
          .map((el) => el.outerHTML.slice(0, 80)),
      );
      assert.deepEqual(unlabelled, [], `${path}: controls without a label`);
      if (name) await shot(page, name);
    }
    await page.goto('/alerts');
    await page.getByRole('cell', { name: 'Support errors above 20%' }).first().waitFor();
    await page.goto('/guardrails');
    await page.getByRole('cell', { name: 'Pause on runaway spend' }).first().waitFor();

    await page.goto('/agents/support-bot');
    await page.getByRole('rowheader', { name: 'Error rate' }).waitFor();
    await page.getByLabel('Reason for pausing (optional)').fill('too many errors');
    await page.getByRole('button', { name: 'Pause agent' }).click();
    await page.getByText(/paused\s+since/).waitFor();
    assert.equal((await api<{ pauseReason: string }>(stack.observeUrl, stack.observeKey, 'GET', '/api/agents/support-bot')).pauseReason, 'too many errors');
    await page.getByRole('button', { name: 'Resume agent' }).click();
    await page.getByRole('button', { name: 'Pause agent' }).waitFor();

    await page.goto('/benchmarks');
    await page.getByRole('link', { name: 'Prompt v1 vs v2' }).click();
    await page.getByText('Comparisons (differences are B − A)').waitFor();
    await shot(page, 'benchmark');

    await page.goto('/recall');
    await page.getByLabel('Search for').fill('refund policy');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText(/matches; the best/).waitFor();
    await shot(page, 'recall');
    stack.noProblems();
  });

  test('signing out ends the gate session on the server and forgets the keys', async () => {
    const { page } = stack;
    const stored = JSON.parse(await page.evaluate(() => sessionStorage.getItem('vigil.credentials') ?? '{}')) as { gate: { token: string } };
    const revoked = page.waitForResponse((r) => r.request().method() === 'DELETE' && r.url().endsWith('/api/dashboard/sessions/current'));
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to Vigil' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('vigil.credentials')), null);
    assert.equal((await revoked).status(), 200);
    const response = await fetch(`${stack.gateUrl}/api/requests`, { headers: { authorization: `Bearer ${stored.gate.token}` } });
    assert.equal(response.status, 401);
    stack.noProblems();
  });
});
