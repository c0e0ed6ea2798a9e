import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ObserveFixture } from './eval-gate-observe-fixture.ts';
import { freePort, runCli } from './eval-gate-testkit.ts';

// Trace scoring with a compliance evaluator: the real `vigil eval-gate` binary (a child process,
// CI=true) against the real observe app on an ephemeral port over a fresh SQLite file. The LLM
// judge and server errors: eval-gate-judge.test.ts; dataset mode: eval-gate-dataset.test.ts.

describe('vigil eval-gate trace scoring (compliance) against the real observe service', () => {
  let observe: ObserveFixture;
  let complianceId = '';

  before(async () => {
    observe = await ObserveFixture.start();
    // Agent "good": three clean sessions. Agent "mixed": the oldest calls delete_db, the three newest are clean.
    for (const id of ['good-1', 'good-2', 'good-3']) await observe.ingestSession(id, 'good', ['search']);
    await observe.ingestSession('mixed-1', 'mixed', ['search', 'delete_db']);
    for (const id of ['mixed-2', 'mixed-3', 'mixed-4']) await observe.ingestSession(id, 'mixed', ['search']);
    await observe.ingestSession('spare-1', 'spare', ['search']);
    complianceId = await observe.createNoDeleteEvaluator();
  });

  after(async () => {
    await observe?.close();
  });

  test('compliance by --session-ids: all pass → exit 0, one plain line per session, table and verdict; each verdict chained', async () => {
    const result = await runCli(['--evaluator-id', complianceId, '--session-ids', 'good-1,good-2,good-3', '--min-pass-rate', '1'], observe.cliEnv());
    assert.equal(result.code, 0, result.stderr);
    for (const id of ['good-1', 'good-2', 'good-3']) assert.match(result.stderr, new RegExp(`^\\[\\d/3\\] ${id}: PASS \\(score 1\\.00\\)$`, 'm'));
    assert.doesNotMatch(result.stderr, /\r|\x1b\[/, 'no live progress line under CI=true');
    assert.match(result.stdout, /^session\s+score\s+result\s+reason$/m);
    assert.match(result.stdout, /^good-2\s+1\.00\s+PASS/m);
    assert.match(result.stdout, /^pass rate 1\.00 \(3\/3\), required 1\.00: PASS$/m);
    const events = await observe.evalEvents('good-1');
    assert.equal(events.length, 1, 'the CLI evaluated through the compliance endpoint, which chained one eval_result');
    assert.equal(events[0]!.payload.method, 'deterministic');
  });

  test('compliance by --agent-id --limit: the newest sessions only; below the rate → exit 1 with the failing reason', async () => {
    const [result, newest] = await Promise.all([
      runCli(['--evaluator-id', complianceId, '--agent-id', 'mixed', '--limit', '4', '--min-pass-rate', '0.8'], observe.cliEnv()),
      runCli(['--evaluator-id', complianceId, '--agent-id', 'mixed', '--limit', '3', '--min-pass-rate', '1', '--json'], observe.cliEnv()),
    ]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stdout, /^pass rate 0\.75 \(3\/4\), required 0\.80: FAIL$/m);
    assert.match(result.stdout, /^mixed-1\s+0\.00\s+FAIL\s+\S.*$/m, 'the failing row carries a reason');
    assert.match(result.stderr, /mixed-1: FAIL \(score 0\.00\) .*delete_db/);
    assert.equal(newest.code, 0, newest.stderr);
    const report = JSON.parse(newest.stdout);
    assert.equal(report.result, 'pass');
    assert.equal(report.passRate, 1);
    assert.deepEqual(
      report.sessions.map((s: { sessionId: string }) => s.sessionId),
      ['mixed-4', 'mixed-3', 'mixed-2'],
      'newest first, --limit honoured',
    );
  });

  test('a pass rate equal to --min-pass-rate passes (exit 0); the default --limit covers all four sessions', async () => {
    const result = await runCli(['--evaluator-id', complianceId, '--agent-id', 'mixed', '--min-pass-rate', '0.75'], observe.cliEnv());
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^pass rate 0\.75 \(3\/4\), required 0\.75: PASS$/m);
  });

  test('a session whose hash chain is broken fails the gate (exit 1) whatever the pass rate, naming the session and the broken step', async () => {
    await observe.ingestSession('chain-ok', 'chains', ['search']);
    await observe.ingestSession('chain-tampered', 'chains', ['search']);
    const tamperedId = await observe.tamperEvent('chain-tampered', 1);
    const broken = new RegExp(`the hash chain of session chain-tampered is broken at seq 1 \\(event ${tamperedId}\\): hash does not match the event content`);

    const result = await runCli(['--evaluator-id', complianceId, '--session-ids', 'chain-ok,chain-tampered', '--min-pass-rate', '0'], observe.cliEnv());
    assert.equal(result.code, 1, `${result.stdout}\n${result.stderr}`);
    assert.match(result.stderr, new RegExp(`^vigil eval-gate: ${broken.source}$`, 'm'));
    assert.match(result.stderr, /^\[\d\/2\] chain-tampered: BROKEN CHAIN /m);
    assert.match(result.stdout, /^chain-tampered\s+-\s+BROKEN\s+\S/m);
    assert.match(result.stdout, /^pass rate 0\.50 \(1\/2\), required 0\.00: PASS$/m);
    assert.match(result.stdout, new RegExp(`^FAIL: ${broken.source}$`, 'm'));
    assert.equal((await observe.evalEvents('chain-ok')).length, 1, 'the intact session was scored');
    const timeline = await observe.api('GET', '/api/sessions/chain-tampered/timeline');
    assert.equal(timeline.json.chainValid, false);
    assert.equal(
      timeline.json.events.filter((e: { eventType: string }) => e.eventType === 'eval_result').length,
      0,
      'no verdict chained onto the broken chain',
    );

    const json = await runCli(['--evaluator-id', complianceId, '--session-ids', 'chain-tampered', '--min-pass-rate', '0', '--json'], observe.cliEnv());
    assert.equal(json.code, 1, json.stderr);
    const report = JSON.parse(json.stdout);
    assert.equal(report.result, 'fail');
    assert.deepEqual(report.brokenChains, [
      { sessionId: 'chain-tampered', brokenAt: { seq: 1, eventId: tamperedId, reason: 'hash does not match the event content' } },
    ]);
  });

  test('a bad option exits 2 and evaluates nothing', async () => {
    const result = await runCli(['--evaluator-id', complianceId, '--session-ids', 'spare-1', '--min-pass-rate', '80'], observe.cliEnv());
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--min-pass-rate must be between 0 and 1/);
    assert.equal((await observe.evalEvents('spare-1')).length, 0);
  });

  test('an unreachable URL exits 2', async () => {
    const port = await freePort();
    const result = await runCli(
      ['--url', `http://127.0.0.1:${port}`, '--evaluator-id', complianceId, '--session-ids', 'spare-1', '--min-pass-rate', '1'],
      observe.cliEnv(),
    );
    assert.equal(result.code, 2);
    assert.match(result.stderr, new RegExp(`cannot reach the Vigil server at http://127.0.0.1:${port} .*ECONNREFUSED`));
    assert.equal((await observe.evalEvents('spare-1')).length, 0);
  });
});
