import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sendJson, TestHttpServer } from '@vigil/platform/testing';
import {
  DEFAULT_LIMIT,
  DEFAULT_TIMEOUT_SECONDS,
  UsageError,
  formatRate,
  liveProgressWanted,
  parseSessionIds,
  renderTable,
  resolveGateOptions,
  truncate,
  verdict,
  verdictLine,
  type DatasetPlan,
  type RawGateOptions,
  type TracePlan,
} from './eval-gate-core.ts';
import { runCli } from './eval-gate-testkit.ts';

// Pure helpers directly, then the real CLI binary against a scripted HTTP server (behaviour that
// needs no real observe). The real observe service: eval-gate-observe.test.ts (trace scoring) and
// eval-gate-dataset.test.ts (dataset mode).

function resolveOk(raw: RawGateOptions, env: NodeJS.ProcessEnv = {}) {
  return resolveGateOptions(raw, env);
}

function usageError(raw: RawGateOptions, pattern: RegExp, env: NodeJS.ProcessEnv = {}): void {
  assert.throws(
    () => resolveGateOptions(raw, env),
    (error: unknown) => error instanceof UsageError && pattern.test(error.message),
    `expected a usage error matching ${pattern} for ${JSON.stringify(raw)}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Pure helpers

describe('eval-gate option resolution', () => {
  test('trace scoring by session ids: server from VIGIL_URL, key from VIGIL_API_KEY, ids trimmed and de-duplicated', () => {
    const plan = resolveOk(
      { evaluatorId: ' ev1 ', sessionIds: 'a, b,,a ,c', minPassRate: '0.8' },
      { VIGIL_URL: 'https://vigil.example.com/base/', VIGIL_API_KEY: 'vk_secret' },
    ) as TracePlan;
    assert.equal(plan.mode, 'trace');
    assert.equal(plan.url, 'https://vigil.example.com/base');
    assert.equal(plan.apiKey, 'vk_secret');
    assert.equal(plan.evaluatorId, 'ev1');
    assert.deepEqual(plan.sessions, { kind: 'ids', ids: ['a', 'b', 'c'] });
    assert.equal(plan.minPassRate, 0.8);
    assert.equal(plan.json, false);
  });

  test('--url wins over VIGIL_URL; without either the default is http://localhost:3400; no key means no key', () => {
    assert.equal(
      resolveOk({ url: 'http://127.0.0.1:9', evaluatorId: 'e', sessionIds: 's', minPassRate: '1' }, { VIGIL_URL: 'http://other:1' }).url,
      'http://127.0.0.1:9',
    );
    const plan = resolveOk({ evaluatorId: 'e', sessionIds: 's', minPassRate: '1' }, {});
    assert.equal(plan.url, 'http://localhost:3400');
    assert.equal(plan.apiKey, undefined);
  });

  test('trace scoring by agent: limit defaults to 20 and is bounded by the server cap (1-500)', () => {
    const plan = resolveOk({ evaluatorId: 'e', agentId: 'bot', minPassRate: '0' }) as TracePlan;
    assert.deepEqual(plan.sessions, { kind: 'agent', agentId: 'bot', limit: DEFAULT_LIMIT });
    assert.equal((resolveOk({ evaluatorId: 'e', agentId: 'bot', limit: '500', minPassRate: '0' }) as TracePlan).sessions.kind, 'agent');
    usageError({ evaluatorId: 'e', agentId: 'bot', limit: '0', minPassRate: '0' }, /--limit must be between 1 and 500/);
    usageError({ evaluatorId: 'e', agentId: 'bot', limit: '501', minPassRate: '0' }, /--limit must be between 1 and 500/);
    usageError({ evaluatorId: 'e', agentId: 'bot', limit: '2.5', minPassRate: '0' }, /--limit must be a whole number/);
  });

  test('dataset mode: needs --agent-id and --webhook-url, timeout defaults to 300 s, evaluator optional', () => {
    const plan = resolveOk({ datasetId: 'ds', agentId: 'bot', webhookUrl: 'http://127.0.0.1:8080/run?x=1', minPassRate: '0.5' }) as DatasetPlan;
    assert.equal(plan.mode, 'dataset');
    assert.equal(plan.timeoutMs, DEFAULT_TIMEOUT_SECONDS * 1000);
    assert.equal(plan.webhookUrl, 'http://127.0.0.1:8080/run?x=1', 'the webhook URL is passed on as typed');
    assert.equal(plan.evaluatorId, undefined);
    assert.equal(plan.caseTimeoutSeconds, undefined);
    const timed = resolveOk({
      datasetId: 'ds',
      agentId: 'bot',
      webhookUrl: 'http://h/x',
      minPassRate: '1',
      timeoutSeconds: '1.5',
      evaluatorId: 'ev',
      caseTimeoutSeconds: '45',
    }) as DatasetPlan;
    assert.equal(timed.timeoutMs, 1500);
    assert.equal(timed.evaluatorId, 'ev');
    assert.equal(timed.caseTimeoutSeconds, 45);
    usageError({ datasetId: 'ds', webhookUrl: 'http://h/x', minPassRate: '1' }, /dataset mode needs --agent-id/);
    usageError({ datasetId: 'ds', agentId: 'bot', minPassRate: '1' }, /dataset mode needs --webhook-url/);
    usageError({ datasetId: 'ds', agentId: 'bot', webhookUrl: 'ftp://h/x', minPassRate: '1' }, /--webhook-url must be an http/);
    usageError({ datasetId: 'ds', agentId: 'bot', webhookUrl: 'http://h/x', minPassRate: '1', timeoutSeconds: '0' }, /--timeout-seconds must be more than 0/);
    usageError(
      { datasetId: 'ds', agentId: 'bot', webhookUrl: 'http://h/x', minPassRate: '1', caseTimeoutSeconds: '601' },
      /--case-timeout-seconds must be between 1 and 600/,
    );
  });

  test('mixing the two modes is refused, naming the option', () => {
    usageError({ datasetId: 'ds', agentId: 'bot', webhookUrl: 'http://h/x', sessionIds: 'a', minPassRate: '1' }, /--session-ids belongs to trace scoring mode/);
    usageError({ datasetId: 'ds', agentId: 'bot', webhookUrl: 'http://h/x', limit: '5', minPassRate: '1' }, /--limit belongs to trace scoring mode/);
    usageError({ evaluatorId: 'e', sessionIds: 'a', webhookUrl: 'http://h/x', minPassRate: '1' }, /--webhook-url belongs to dataset mode/);
    usageError({ evaluatorId: 'e', sessionIds: 'a', timeoutSeconds: '10', minPassRate: '1' }, /--timeout-seconds belongs to dataset mode/);
    usageError({ evaluatorId: 'e', sessionIds: 'a', agentId: 'bot', minPassRate: '1' }, /either --session-ids or --agent-id/);
  });

  test('missing pieces are usage errors', () => {
    usageError({}, /choose a mode/);
    usageError({ sessionIds: 'a', minPassRate: '1' }, /needs --evaluator-id/);
    usageError({ evaluatorId: 'e', minPassRate: '1' }, /needs the sessions to score/);
    usageError({ evaluatorId: 'e', sessionIds: 'a' }, /--min-pass-rate is required/);
    usageError({ evaluatorId: 'e', sessionIds: ' , ,', minPassRate: '1' }, /at least one session/);
    usageError({ evaluatorId: 'e', sessionIds: 'a', limit: '3', minPassRate: '1' }, /--limit applies to --agent-id only/);
    usageError({ evaluatorId: '  ', sessionIds: 'a', minPassRate: '1' }, /--evaluator-id must not be empty/);
  });

  test('--min-pass-rate is a fraction from 0 to 1, inclusive at both ends', () => {
    for (const good of ['0', '1', '0.85', '.5', '1.0']) {
      assert.equal(resolveOk({ evaluatorId: 'e', sessionIds: 'a', minPassRate: good }).minPassRate, Number(good));
    }
    for (const bad of ['1.01', '85', '-0.1']) usageError({ evaluatorId: 'e', sessionIds: 'a', minPassRate: bad }, /between 0 and 1/);
    for (const bad of ['', 'abc', '0x1', '1e-1', '80%']) usageError({ evaluatorId: 'e', sessionIds: 'a', minPassRate: bad }, /must be a number/);
  });

  test('the server address must be an http(s) URL without query', () => {
    usageError({ url: 'localhost:3400', evaluatorId: 'e', sessionIds: 'a', minPassRate: '1' }, /--url must be an http/);
    usageError({ url: 'not a url', evaluatorId: 'e', sessionIds: 'a', minPassRate: '1' }, /--url is not a URL/);
    usageError({ evaluatorId: 'e', sessionIds: 'a', minPassRate: '1' }, /VIGIL_URL/, { VIGIL_URL: 'http://h/?q=1' });
  });

  test('parseSessionIds keeps first-seen order', () => {
    assert.deepEqual(parseSessionIds('b,a,b, c'), ['b', 'a', 'c']);
  });
});

describe('eval-gate pass rate and rendering', () => {
  test('the pass rate is passed / evaluated and the threshold is inclusive', () => {
    assert.deepEqual(verdict(17, 20, 0.8), { passed: 17, total: 20, passRate: 0.85, minPassRate: 0.8, ok: true });
    assert.equal(verdict(17, 20, 0.85).ok, true, 'equal to the minimum passes');
    assert.equal(verdict(3, 4, 0.8).ok, false);
    assert.equal(verdict(0, 5, 0).ok, true, 'a minimum of 0 always passes');
    assert.equal(verdict(5, 5, 1).ok, true);
    assert.throws(() => verdict(0, 0, 0.5), RangeError, 'no evaluated item means no pass rate');
    assert.throws(() => verdict(3, 2, 0.5), RangeError);
  });

  test('the final line reads "pass rate R (p/n), required M: PASS|FAIL" without misleading rounding', () => {
    assert.equal(verdictLine(verdict(17, 20, 0.8)), 'pass rate 0.85 (17/20), required 0.80: PASS');
    assert.equal(verdictLine(verdict(3, 4, 0.8)), 'pass rate 0.75 (3/4), required 0.80: FAIL');
    assert.equal(verdictLine(verdict(2, 3, 0.67)), 'pass rate 0.6667 (2/3), required 0.67: FAIL');
    assert.equal(formatRate(1), '1.00');
    assert.equal(formatRate(0.125), '0.125');
  });

  test('the summary table aligns columns and truncates long reasons to one line', () => {
    const reason = truncate('first line\nsecond line that goes on and on', 20);
    assert.equal(reason, 'first line second l…');
    assert.equal(reason.length, 20);
    const table = renderTable(
      ['session', 'score', 'result', 'reason'],
      [
        ['s-1', '1.00', 'PASS', ''],
        ['a-much-longer-id', '0.00', 'FAIL', reason],
      ],
    );
    assert.equal(
      table,
      [
        'session           score  result  reason',
        '----------------  -----  ------  --------------------',
        's-1               1.00   PASS',
        'a-much-longer-id  0.00   FAIL    first line second l…',
      ].join('\n'),
    );
  });

  test('the live progress line is for terminals outside CI only', () => {
    assert.equal(liveProgressWanted(true, {}), true);
    assert.equal(liveProgressWanted(true, { CI: 'true' }), false);
    assert.equal(liveProgressWanted(true, { CI: '1' }), false);
    assert.equal(liveProgressWanted(true, { CI: 'false' }), true);
    assert.equal(liveProgressWanted(false, {}), false);
    assert.equal(liveProgressWanted(undefined, {}), false);
  });
});

// ---------------------------------------------------------------------------------------------
// The real binary against a scripted HTTP server: behaviour that needs no real observe

describe('vigil eval-gate against a scripted server', () => {
  let server: TestHttpServer;
  before(async () => {
    server = await new TestHttpServer((_request, res) => sendJson(res, 500, { error: 'unscripted', status: 500 })).start();
  });
  after(() => server.stop());

  test('--api-key is not an option: usage error (exit 2) pointing at VIGIL_API_KEY, and no request is made', async () => {
    server.requests.length = 0;
    const result = await runCli(['--url', server.url, '--evaluator-id', 'e', '--session-ids', 'a', '--min-pass-rate', '1', '--api-key', 'vk_x']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /unknown option '--api-key'/);
    assert.match(result.stderr, /VIGIL_API_KEY/);
    assert.equal(server.requests.length, 0);
  });

  test('usage errors exit 2 before any request: mixed modes, rate out of range, stray argument', async () => {
    server.requests.length = 0;
    const cases: Array<[string[], RegExp]> = [
      [
        ['--evaluator-id', 'e', '--session-ids', 'a', '--dataset-id', 'ds', '--agent-id', 'x', '--webhook-url', 'http://h/', '--min-pass-rate', '1'],
        /--session-ids belongs to trace scoring mode/,
      ],
      [['--evaluator-id', 'e', '--session-ids', 'a', '--min-pass-rate', '1.5'], /between 0 and 1/],
      [['--evaluator-id', 'e', '--session-ids', 'a', '--min-pass-rate', '1', 'extra'], /too many arguments/],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(['--url', server.url, ...args])));
    cases.forEach(([args, message], i) => {
      assert.equal(results[i]!.code, 2, `${args.join(' ')}\n${results[i]!.stderr}`);
      assert.match(results[i]!.stderr, message);
    });
    assert.equal(server.requests.length, 0);
  });

  test('--help exits 0 and documents the exit codes', async () => {
    const result = await runCli(['--help']);
    assert.equal(result.code, 0);
    assert.match(result.stdout, /Exit codes:/);
    assert.match(result.stdout, /VIGIL_API_KEY/);
  });

  test('a 401 prints the server message with a hint and exits 2; the key from VIGIL_API_KEY is sent as a bearer token', async () => {
    server.requests.length = 0;
    server.handler = (_request, res) => sendJson(res, 401, { error: 'Missing or invalid API key', status: 401 });
    const result = await runCli(['--evaluator-id', 'ev 1', '--session-ids', 'a', '--min-pass-rate', '1'], {
      VIGIL_URL: server.url,
      VIGIL_API_KEY: 'vk_wrong',
    });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /GET \/api\/evaluators\/ev%201 answered 401: Missing or invalid API key \(check VIGIL_API_KEY\)/);
    assert.equal(server.requests.length, 1);
    assert.equal(server.requests[0]!.headers.authorization, 'Bearer vk_wrong');
  });

  test('a server that never answers hits the request timeout: exit 2', async () => {
    server.handler = () => undefined; // holds the request open
    const started = Date.now();
    const result = await runCli(['--url', server.url, '--evaluator-id', 'e', '--session-ids', 'a', '--min-pass-rate', '1', '--request-timeout-seconds', '0.5']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /no answer from .* within 0\.5 s/);
    assert.ok(Date.now() - started < 20_000);
  });

  test('a validation error body prints its message and exits 2; scoring stops at the first failing session', async () => {
    server.requests.length = 0;
    server.handler = (request, res) => {
      if (request.url.startsWith('/api/evaluators/')) return sendJson(res, 200, { id: 'e', name: 'rules', kind: 'compliance' });
      if (request.url === '/api/eval/sessions/s1/compliance')
        return sendJson(res, 201, { sessionId: 's1', method: 'deterministic', score: 1, passed: true, reasoning: 'ok' });
      return sendJson(res, 404, { error: 'Session not found', status: 404 });
    };
    const result = await runCli(['--url', server.url, '--evaluator-id', 'e', '--session-ids', 's1,missing,s3', '--concurrency', '1', '--min-pass-rate', '0']);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /session missing: POST \/api\/eval\/sessions\/missing\/compliance answered 404: Session not found/);
    const posts = server.requests.filter((r) => r.method === 'POST').map((r) => r.url);
    assert.deepEqual(posts, ['/api/eval/sessions/s1/compliance', '/api/eval/sessions/missing/compliance']);
    assert.deepEqual(JSON.parse(server.requests.find((r) => r.method === 'POST')!.body), { evaluatorId: 'e' });
  });

  test('an evaluator of another kind is refused with exit 2', async () => {
    server.handler = (_request, res) => sendJson(res, 200, { id: 'e', name: 'x', kind: 'regex' });
    const result = await runCli(['--url', server.url, '--evaluator-id', 'e', '--session-ids', 'a', '--min-pass-rate', '1']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /kind "regex"/);
  });

  test('dataset mode polls with growing delays, tolerates a failed poll, and gives up at --timeout-seconds with exit 2', async () => {
    server.requests.length = 0;
    const run = { id: 'run1', status: 'running', totalCases: 2, completedCases: 0, passedCases: 0, failedCases: 0, cases: [] };
    let polls = 0;
    server.handler = (request, res) => {
      if (request.method === 'POST') return sendJson(res, 202, run);
      polls++;
      if (polls === 2) return sendJson(res, 503, { error: 'The database is unavailable; retry shortly', status: 503 });
      return sendJson(res, 200, run);
    };
    const started = Date.now();
    const result = await runCli([
      '--url',
      server.url,
      '--dataset-id',
      'ds',
      '--agent-id',
      'bot',
      '--webhook-url',
      'http://127.0.0.1:9/hook',
      '--min-pass-rate',
      '1',
      '--timeout-seconds',
      '3',
      '--case-timeout-seconds',
      '5',
    ]);
    const elapsed = Date.now() - started;
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /dataset run run1 did not complete within 3 s .*0\/2 cases done/);
    assert.match(result.stderr, /poll 1\/3 of run run1 failed, retrying: .*503/);
    const post = server.requests.find((r) => r.method === 'POST')!;
    assert.equal(post.url, '/api/datasets/ds/runs');
    assert.deepEqual(JSON.parse(post.body), { agentId: 'bot', webhookUrl: 'http://127.0.0.1:9/hook', caseTimeoutSeconds: 5 });
    // 250, 500, 1000, 2000 ms … : about 4 polls in 3 s, never a busy loop.
    assert.ok(polls >= 3 && polls <= 6, `polled ${polls} times`);
    assert.ok(server.requests.filter((r) => r.method === 'GET').every((r) => r.url === '/api/runs/run1'));
    assert.ok(elapsed < 20_000);
  });

  test('a dataset run that ends in a status other than completed exits 2', async () => {
    server.handler = (request, res) =>
      sendJson(res, request.method === 'POST' ? 202 : 200, {
        id: 'r',
        status: request.method === 'POST' ? 'running' : 'cancelled',
        totalCases: 1,
        passedCases: 0,
        cases: [],
      });
    const result = await runCli([
      '--url',
      server.url,
      '--dataset-id',
      'ds',
      '--agent-id',
      'bot',
      '--webhook-url',
      'http://127.0.0.1:9/',
      '--min-pass-rate',
      '1',
    ]);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /ended with status "cancelled"/);
  });
});
