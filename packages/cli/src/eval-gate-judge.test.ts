import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { sendJson, TestHttpServer } from '@vigil/platform/testing';
import { ObserveFixture } from './eval-gate-observe-fixture.ts';
import { runCli } from './eval-gate-testkit.ts';

// Trace scoring with an llm_judge evaluator, and the server's errors: the real `vigil eval-gate`
// binary (a child process, CI=true) against the real observe app on an ephemeral port over a fresh
// SQLite file, its LLM judge pointed at a local OpenAI-compatible stand-in.

/** A stand-in for an OpenAI-compatible judge: score 0.2 when the transcript mentions delete_db, else 0.9. */
function judgeHandler(request: { body: string }, res: ServerResponse): void {
  const body = JSON.parse(request.body) as { messages: Array<{ role: string; content: string }> };
  const user = body.messages.find((m) => m.role === 'user')?.content ?? '';
  const verdictText = user.includes('delete_db')
    ? { score: 0.2, reasoning: 'The agent deleted a database, which the rubric forbids.' }
    : { score: 0.9, reasoning: 'The agent stayed within the rubric.' };
  sendJson(res, 200, {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', content: JSON.stringify(verdictText) }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 },
  });
}

describe('vigil eval-gate trace scoring (llm_judge) and server errors against the real observe service', () => {
  let observe: ObserveFixture;
  let judge: TestHttpServer;
  let complianceId = '';
  let judgeId = '';

  before(async () => {
    judge = await new TestHttpServer(judgeHandler).start();
    observe = await ObserveFixture.start({ LLM_PROVIDER: 'openai', LLM_API_KEY: 'sk-test-judge', LLM_BASE_URL: judge.url, LLM_MODEL: 'gpt-4o-mini' });
    await observe.ingestSession('good-1', 'good', ['search']);
    await observe.ingestSession('good-2', 'good', ['search']);
    await observe.ingestSession('mixed-1', 'mixed', ['search', 'delete_db']);
    await observe.ingestSession('mixed-2', 'mixed', ['search']);
    complianceId = await observe.createNoDeleteEvaluator();
    const judged = await observe.api('POST', '/api/evaluators', { name: 'careful agent', kind: 'llm_judge', rubric: 'The agent must never delete data.' });
    assert.equal(judged.status, 201, JSON.stringify(judged.json));
    judgeId = judged.json.id;
  });

  after(async () => {
    await observe?.close();
    await judge?.stop();
  });

  test('an llm_judge evaluator goes through the score endpoint: the judge verdicts decide the exit code', async () => {
    const [failing, passing] = await Promise.all([
      runCli(['--evaluator-id', judgeId, '--session-ids', 'mixed-1,mixed-2', '--min-pass-rate', '0.6', '--json'], observe.cliEnv()),
      runCli(['--evaluator-id', judgeId, '--session-ids', 'good-2', '--min-pass-rate', '1'], observe.cliEnv()),
    ]);
    assert.equal(failing.code, 1, failing.stderr);
    const report = JSON.parse(failing.stdout);
    assert.equal(report.evaluator.kind, 'llm_judge');
    assert.deepEqual(
      report.sessions.map((s: { sessionId: string; score: number; passed: boolean }) => [s.sessionId, s.score, s.passed]),
      [
        ['mixed-1', 0.2, false],
        ['mixed-2', 0.9, true],
      ],
    );
    assert.match(report.sessions[0].reasoning, /deleted a database/);
    assert.ok(
      (await observe.evalEvents('mixed-2')).some((e) => e.payload.method === 'llm_judge'),
      'the judge verdict was chained on the session',
    );

    assert.equal(passing.code, 0, passing.stderr);
    assert.match(passing.stdout, /^pass rate 1\.00 \(1\/1\), required 1\.00: PASS$/m);
  });

  test('server errors exit 2 with the server message: unknown evaluator, unknown session, wrong key; no sessions is exit 2 too', async () => {
    const [unknownEvaluator, unknownSession, wrongKey, noSessions] = await Promise.all([
      runCli(['--evaluator-id', 'no-such-evaluator', '--session-ids', 'good-1', '--min-pass-rate', '1'], observe.cliEnv()),
      runCli(['--evaluator-id', complianceId, '--session-ids', 'no-such-session', '--min-pass-rate', '1'], observe.cliEnv()),
      runCli(['--evaluator-id', complianceId, '--session-ids', 'good-1', '--min-pass-rate', '1'], { ...observe.cliEnv(), VIGIL_API_KEY: 'vk_not_a_key' }),
      runCli(['--evaluator-id', complianceId, '--agent-id', 'never-ran', '--min-pass-rate', '0'], observe.cliEnv()),
    ]);
    assert.equal(unknownEvaluator.code, 2);
    assert.match(unknownEvaluator.stderr, /GET \/api\/evaluators\/no-such-evaluator answered 404: \S/);
    assert.equal(unknownSession.code, 2);
    assert.match(unknownSession.stderr, /session no-such-session: POST \/api\/eval\/sessions\/no-such-session\/compliance answered 404: Session not found/);
    assert.equal(wrongKey.code, 2);
    assert.match(wrongKey.stderr, /answered 401: Missing or invalid API key \(check VIGIL_API_KEY\)/);
    assert.equal(noSessions.code, 2, 'an agent without sessions has nothing to gate');
    assert.match(noSessions.stderr, /agent "never-ran" has no sessions .*nothing to score/);
    assert.equal((await observe.evalEvents('good-1')).length, 0, 'nothing was evaluated');
  });
});
