import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import { assertErrorBody, ingest, insertEventCopy, startTestObserve, type TestObserve } from '../testing.ts';
import type { Event } from '../events/index.ts';

type Json = Record<string, any>;

const SERVICE_TOKEN = 'svc-token-for-breach-tests-0123456789';

async function timeline(observe: TestObserve, sessionId: string): Promise<Event[]> {
  const response = await observe.call({ method: 'GET', url: `/api/sessions/${encodeURIComponent(sessionId)}/timeline` });
  assert.equal(response.statusCode, 200, response.body);
  return (response.json() as { events: Event[] }).events;
}

async function verify(observe: TestObserve, sessionId: string): Promise<Json> {
  const response = await observe.call({ method: 'GET', url: `/api/audit/verify?sessionId=${encodeURIComponent(sessionId)}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as Json;
}

async function comply(observe: TestObserve, sessionId: string, body: unknown): Promise<LightMyRequestResponse> {
  return observe.call({ method: 'POST', url: `/api/eval/sessions/${encodeURIComponent(sessionId)}/compliance`, payload: body as object });
}

async function eventCount(observe: TestObserve): Promise<number> {
  const row = await observe.service.context.database.db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

const tool = (sessionId: string, toolName: string, callId: string): Json => ({
  sessionId,
  agentId: 'agent-c',
  eventType: 'tool_call',
  payload: { toolName, callId, arguments: {} },
});

/** A session with tools db.query ×2, db.delete, fs_read, shell_exec; spend 0.01 + 0.02; highest severity warn. */
function session(sessionId: string): Json[] {
  return [
    { sessionId, agentId: 'agent-c', eventType: 'session_started', payload: { agentName: 'Compliance agent' } },
    tool(sessionId, 'db.query', 'c1'),
    tool(sessionId, 'db.query', 'c2'),
    tool(sessionId, 'db.delete', 'c3'),
    tool(sessionId, 'fs_read', 'c4'),
    tool(sessionId, 'shell_exec', 'c5'),
    {
      sessionId,
      agentId: 'agent-c',
      eventType: 'llm_response',
      payload: {
        callId: 'l1',
        provider: 'openai',
        model: 'gpt-4o',
        completion: 'hi',
        finishReason: 'stop',
        usage: { inputTokens: 10, outputTokens: 5 },
        costUsd: 0.01,
        latencyMs: 20,
      },
    },
    {
      sessionId,
      agentId: 'agent-c',
      eventType: 'cost_tracked',
      payload: { provider: 'openai', model: 'gpt-4o', inputTokens: 1, outputTokens: 1, totalTokens: 2, costUsd: 0.02 },
    },
    { sessionId, agentId: 'agent-c', eventType: 'custom', severity: 'warn', payload: { type: 'note', data: 'careful' } },
    // Debug is below everything; a tool_call with severity debug is still a call.
    { sessionId, agentId: 'agent-c', eventType: 'custom', severity: 'debug', payload: { type: 'trace', data: 1 } },
  ];
}

const RESULT_KEYS = ['event', 'method', 'passed', 'reasoning', 'rulesEvaluated', 'score', 'sessionId', 'violations'];

await describeEachDatabase('compliance evaluations', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
    await ingest(observe, session('s-comp'));
  });
  after(() => observe.close());

  test('the response is exactly the documented shape, and the verdict is chained as an eval_result', async () => {
    const head = await verify(observe, 's-comp');
    const response = await comply(observe, 's-comp', { rules: [{ id: 'no-rm', type: 'tool_denylist', tools: ['rm'], description: 'never delete files' }] });
    assert.equal(response.statusCode, 201, response.body);
    const body = response.json() as Json;
    assert.deepEqual(Object.keys(body).sort(), RESULT_KEYS);
    assert.deepEqual(Object.keys(body.event).sort(), ['hash', 'id', 'prevHash']);
    assert.equal(body.sessionId, 's-comp');
    assert.equal(body.method, 'deterministic');
    assert.equal(body.score, 1);
    assert.equal(body.passed, true);
    assert.deepEqual(body.violations, []);
    assert.equal(body.rulesEvaluated, 1);
    assert.equal(typeof body.reasoning, 'string');
    // The new event extends the chain: its prevHash is the previous head.
    assert.equal(body.event.prevHash, head.headHash);
    const after = await verify(observe, 's-comp');
    assert.equal(after.valid, true);
    assert.equal(after.headHash, body.event.hash);
    assert.equal(after.eventCount, head.eventCount + 1);

    const events = await timeline(observe, 's-comp');
    const stored = events.find((e) => e.id === body.event.id)!;
    assert.equal(stored.eventType, 'eval_result');
    assert.equal(stored.severity, 'info');
    assert.equal(stored.agentId, 'agent-c');
    assert.equal(stored.hash, body.event.hash);
    assert.equal(stored.payload.method, 'deterministic');
    assert.equal(stored.payload.score, 1);
    assert.equal(stored.payload.passed, true);
    assert.equal(stored.payload.reasoning, body.reasoning);
    assert.deepEqual(stored.payload.violations, []);
    assert.equal(stored.payload.rulesEvaluated, 1);
    assert.equal(stored.payload.evaluatorId, undefined);
    assert.equal(stored.payload.throughSeq, head.eventCount - 1);
  });

  test('tool_denylist: exact names and leading/trailing wildcards', async () => {
    const cases: [string[], boolean, RegExp?][] = [
      [['shell_exec'], false, /shell_exec \(1 call\)/],
      [['db.*'], false, /db\.delete \(1 call\), db\.query \(2 calls\)/],
      [['*_exec'], false, /shell_exec/],
      [['*elet*'], false, /db\.delete/],
      [['*_nothing', 'nothing*', 'DB.QUERY', 'db'], true],
    ];
    for (const [tools, passed, detail] of cases) {
      const response = await comply(observe, 's-comp', { rules: [{ id: 'deny', type: 'tool_denylist', tools }] });
      assert.equal(response.statusCode, 201, response.body);
      const body = response.json() as Json;
      assert.equal(body.passed, passed, tools.join(','));
      assert.equal(body.score, passed ? 1 : 0);
      if (detail) {
        assert.equal(body.violations.length, 1);
        assert.equal(body.violations[0].ruleId, 'deny');
        assert.equal(body.violations[0].ruleType, 'tool_denylist');
        assert.match(body.violations[0].detail, detail);
      }
    }
  });

  test('tool_allowlist: every called tool must match an entry', async () => {
    const ok = (await comply(observe, 's-comp', { rules: [{ id: 'allow', type: 'tool_allowlist', tools: ['db.*', 'fs_read', '*_exec'] }] })).json() as Json;
    assert.equal(ok.passed, true);
    const bad = (await comply(observe, 's-comp', { rules: [{ id: 'allow', type: 'tool_allowlist', tools: ['db.query', 'fs_*'] }] })).json() as Json;
    assert.equal(bad.passed, false);
    assert.equal(bad.violations[0].detail, 'called tools outside the allowlist: db.delete (1 call), shell_exec (1 call)');
  });

  test('max_cost: the session’s tracked spend (llm_response + cost_tracked) must not exceed maxUsd', async () => {
    const equal = (await comply(observe, 's-comp', { rules: [{ id: 'budget', type: 'max_cost', maxUsd: 0.03 }] })).json() as Json;
    assert.equal(equal.passed, true);
    const below = (await comply(observe, 's-comp', { rules: [{ id: 'budget', type: 'max_cost', maxUsd: 0.029 }] })).json() as Json;
    assert.equal(below.passed, false);
    assert.match(below.violations[0].detail, /0\.03 USD exceeds maxUsd 0\.029 USD/);
    const zero = (await comply(observe, 's-comp', { rules: [{ id: 'budget', type: 'max_cost', maxUsd: 0 }] })).json() as Json;
    assert.equal(zero.passed, false);
  });

  test('no_severity_above: debug < info < warn < error < critical; eval_result verdicts do not count', async () => {
    // Failed verdicts above were stored as warn; the session's own highest severity is warn too.
    const warn = (await comply(observe, 's-comp', { rules: [{ id: 'sev', type: 'no_severity_above', severity: 'warn' }] })).json() as Json;
    assert.equal(warn.passed, true);
    const info = (await comply(observe, 's-comp', { rules: [{ id: 'sev', type: 'no_severity_above', severity: 'info' }] })).json() as Json;
    assert.equal(info.passed, false);
    assert.equal(info.violations[0].detail, '1 event above info: warn ×1');
    const debug = (await comply(observe, 's-comp', { rules: [{ id: 'sev', type: 'no_severity_above', severity: 'debug' }] })).json() as Json;
    assert.equal(debug.passed, false);
    assert.match(debug.violations[0].detail, /^\d+ events above debug: info ×\d+, warn ×1$/);

    await ingest(observe, [{ sessionId: 's-sev', agentId: 'a', eventType: 'custom', severity: 'critical', payload: { type: 't', data: 0 } }]);
    const error = (await comply(observe, 's-sev', { rules: [{ id: 'sev', type: 'no_severity_above', severity: 'error' }] })).json() as Json;
    assert.equal(error.passed, false);
    assert.equal(error.violations[0].detail, '1 event above error: critical ×1');
    const critical = (await comply(observe, 's-sev', { rules: [{ id: 'sev', type: 'no_severity_above', severity: 'critical' }] })).json() as Json;
    assert.equal(critical.passed, true);
  });

  test('score is the fraction of rules passed; passThreshold is inclusive; without it any violation fails', async () => {
    const rules = [
      { id: 'r1', type: 'tool_denylist', tools: ['rm'] },
      { id: 'r2', type: 'max_cost', maxUsd: 1 },
      { id: 'r3', type: 'no_severity_above', severity: 'error' },
      { id: 'r4', type: 'tool_denylist', tools: ['shell_*'] },
    ];
    const absent = (await comply(observe, 's-comp', { rules })).json() as Json;
    assert.equal(absent.score, 0.75);
    assert.equal(absent.passed, false);
    assert.equal(absent.rulesEvaluated, 4);
    assert.deepEqual(
      absent.violations.map((v: Json) => v.ruleId),
      ['r4'],
    );
    const inclusive = (await comply(observe, 's-comp', { rules, passThreshold: 0.75 })).json() as Json;
    assert.equal(inclusive.passed, true);
    assert.equal(inclusive.score, 0.75);
    const above = (await comply(observe, 's-comp', { rules, passThreshold: 0.76 })).json() as Json;
    assert.equal(above.passed, false);
    const none = (await comply(observe, 's-comp', { rules, passThreshold: 0 })).json() as Json;
    assert.equal(none.passed, true);
    // A failed verdict is a warn, never an error event: the session's error count does not move.
    const events = await timeline(observe, 's-comp');
    const stored = events.find((e) => e.id === absent.event.id)!;
    assert.equal(stored.severity, 'warn');
    assert.equal(stored.payload.passThreshold, null);
    assert.deepEqual(stored.payload.rules, rules);
    assert.equal(events.find((e) => e.id === inclusive.event.id)!.payload.passThreshold, 0.75);
    const detail = (await observe.call({ method: 'GET', url: '/api/sessions/s-comp' })).json() as Json;
    assert.equal(detail.errorCount, 0);
    assert.equal(detail.totalCostUsd, 0.03);
  });

  test('an unknown session is 404 and stores nothing', async () => {
    const before = await eventCount(observe);
    assertErrorBody(await comply(observe, 'no-such-session', { rules: [{ id: 'r', type: 'max_cost', maxUsd: 1 }] }), 404);
    assert.equal(await eventCount(observe), before);
    assert.equal((await observe.call({ method: 'GET', url: '/api/sessions/no-such-session' })).statusCode, 404);
  });

  test('invalid bodies are 400 with details, and store nothing', async () => {
    const before = await eventCount(observe);
    const tooMany = Array.from({ length: 101 }, (_, i) => ({ id: `r${i}`, type: 'max_cost', maxUsd: 1 }));
    const bad: [unknown, string][] = [
      [{}, 'rules'],
      [{ rules: [] }, 'rules'],
      [{ rules: tooMany }, 'rules'],
      [
        {
          rules: [
            { id: 'a', type: 'max_cost', maxUsd: 1 },
            { id: 'a', type: 'max_cost', maxUsd: 2 },
          ],
        },
        'rules.1.id',
      ],
      [{ rules: [{ id: 'a', type: 'tool_denylist' }] }, 'rules.0.tools'],
      [{ rules: [{ id: 'a', type: 'tool_allowlist', tools: [] }] }, 'rules.0.tools'],
      [{ rules: [{ id: 'a', type: 'tool_denylist', tools: ['a*b'] }] }, 'rules.0.tools.0'],
      [{ rules: [{ id: 'a', type: 'max_cost', maxUsd: -1 }] }, 'rules.0.maxUsd'],
      [{ rules: [{ id: 'a', type: 'max_cost' }] }, 'rules.0.maxUsd'],
      [{ rules: [{ id: 'a', type: 'no_severity_above', severity: 'fatal' }] }, 'rules.0.severity'],
      [{ rules: [{ id: 'a', type: 'regex', pattern: '.*' }] }, 'rules.0.type'],
      [{ rules: [{ type: 'max_cost', maxUsd: 1 }] }, 'rules.0.id'],
      [{ rules: [{ id: 'a', type: 'max_cost', maxUsd: 1, tools: ['x'] }] }, 'rules.0'],
      [{ rules: [{ id: 'a', type: 'max_cost', maxUsd: 1 }], passThreshold: 1.5 }, 'passThreshold'],
      [{ rules: [{ id: 'a', type: 'max_cost', maxUsd: 1 }], extra: true }, 'extra'],
      [{ rules: [{ id: 'a', type: 'max_cost', maxUsd: 1 }], evaluatorId: 'x' }, 'rules'],
    ];
    for (const [body, path] of bad) {
      const error = assertErrorBody(await comply(observe, 's-comp', body), 400, JSON.stringify(body).slice(0, 80));
      assert.ok(Array.isArray(error.details), JSON.stringify(error));
      assert.ok(
        (error.details as Json[]).some((d) => d.path === path || (path !== '' && String(d.path).startsWith(path))),
        `${JSON.stringify(body).slice(0, 80)} → ${JSON.stringify(error.details)}`,
      );
    }
    assertErrorBody(
      await observe.call({
        method: 'POST',
        url: '/api/eval/sessions/s-comp/compliance',
        payload: '{"rules":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
    );
    assert.equal(await eventCount(observe), before);
  });

  test('evaluatorId: a saved compliance evaluator supplies rules and threshold; a judge or unknown evaluator is 400', async () => {
    const created = await observe.call({
      method: 'POST',
      url: '/api/evaluators',
      payload: {
        name: 'no shell',
        kind: 'compliance',
        rules: [
          { id: 'no-shell', type: 'tool_denylist', tools: ['shell_*'] },
          { id: 'cheap', type: 'max_cost', maxUsd: 1 },
        ],
        passThreshold: 0.5,
      },
    });
    assert.equal(created.statusCode, 201, created.body);
    const evaluator = created.json() as Json;
    const response = await comply(observe, 's-comp', { evaluatorId: evaluator.id });
    assert.equal(response.statusCode, 201, response.body);
    const body = response.json() as Json;
    assert.equal(body.score, 0.5);
    assert.equal(body.passed, true, 'passThreshold 0.5 of the evaluator, inclusive');
    assert.deepEqual(
      body.violations.map((v: Json) => v.ruleId),
      ['no-shell'],
    );
    const stored = (await timeline(observe, 's-comp')).find((e) => e.id === body.event.id)!;
    assert.equal(stored.payload.evaluatorId, evaluator.id);
    assert.equal(stored.payload.passThreshold, 0.5);

    const judge = (await observe.call({ method: 'POST', url: '/api/evaluators', payload: { name: 'j', kind: 'llm_judge', rubric: 'be kind' } })).json() as Json;
    const before = await eventCount(observe);
    const wrongKind = assertErrorBody(await comply(observe, 's-comp', { evaluatorId: judge.id }), 400);
    assert.match(wrongKind.error, /llm_judge/);
    assertErrorBody(await comply(observe, 's-comp', { evaluatorId: 'no-such-evaluator' }), 400);
    assertErrorBody(await comply(observe, 's-comp', { evaluatorId: evaluator.id, passThreshold: 0.9 }), 400);
    assert.equal(await eventCount(observe), before);
  });

  test('GET /api/audit/verify: valid after evaluations, invalid after a stored score is changed', async () => {
    await ingest(observe, session('s-tamper-score'));
    const verdict = (await comply(observe, 's-tamper-score', { rules: [{ id: 'deny', type: 'tool_denylist', tools: ['shell_exec'] }] })).json() as Json;
    assert.equal(verdict.passed, false);
    await ingest(observe, [{ sessionId: 's-tamper-score', agentId: 'agent-c', eventType: 'custom', payload: { type: 'after', data: 1 } }]);
    assert.equal((await verify(observe, 's-tamper-score')).valid, true);

    const { db } = observe.service.context.database;
    const row = await db.selectFrom('events').select(['payload', 'seq']).where('id', '=', verdict.event.id).executeTakeFirstOrThrow();
    const payload = JSON.parse(row.payload) as Json;
    assert.equal(payload.score, 0);
    // Same canonical layout, only the score differs.
    const forged = row.payload.replace('"score":0', '"score":1');
    assert.notEqual(forged, row.payload);
    await db.updateTable('events').set({ payload: forged }).where('id', '=', verdict.event.id).execute();
    const result = await verify(observe, 's-tamper-score');
    assert.equal(result.valid, false);
    assert.equal(result.brokenAt.seq, row.seq);
    assert.equal(result.brokenAt.eventId, verdict.event.id);
  });

  test('GET /api/audit/verify: invalid after a violation is removed from a stored eval_result', async () => {
    await ingest(observe, session('s-tamper-violation'));
    const verdict = (
      await comply(observe, 's-tamper-violation', {
        rules: [
          { id: 'deny', type: 'tool_denylist', tools: ['shell_exec'] },
          { id: 'budget', type: 'max_cost', maxUsd: 0.001 },
        ],
      })
    ).json() as Json;
    assert.equal(verdict.violations.length, 2);
    assert.equal((await verify(observe, 's-tamper-violation')).valid, true);
    const { db } = observe.service.context.database;
    const row = await db.selectFrom('events').select(['payload']).where('id', '=', verdict.event.id).executeTakeFirstOrThrow();
    const payload = JSON.parse(row.payload) as Json;
    payload.violations = payload.violations.filter((v: Json) => v.ruleId !== 'budget');
    await db
      .updateTable('events')
      .set({ payload: JSON.stringify(payload) })
      .where('id', '=', verdict.event.id)
      .execute();
    const result = await verify(observe, 's-tamper-violation');
    assert.equal(result.valid, false);
    assert.equal(result.brokenAt.eventId, verdict.event.id);
  });

  test('GET /api/audit/verify: invalid after an eval_result row is deleted (in the middle and at the end of the chain)', async () => {
    const { db } = observe.service.context.database;
    for (const [sessionId, trailing] of [
      ['s-delete-middle', true],
      ['s-delete-end', false],
    ] as const) {
      await ingest(observe, session(sessionId));
      const verdict = (await comply(observe, sessionId, { rules: [{ id: 'r', type: 'max_cost', maxUsd: 1 }] })).json() as Json;
      if (trailing) await ingest(observe, [{ sessionId, agentId: 'agent-c', eventType: 'custom', payload: { type: 'after', data: 1 } }]);
      assert.equal((await verify(observe, sessionId)).valid, true);
      await sql`delete from events where id = ${verdict.event.id}`.execute(db);
      const result = await verify(observe, sessionId);
      assert.equal(result.valid, false, sessionId);
      assert.ok(result.brokenAt, sessionId);
    }
  });

  test('409 chain_broken: no verdict is appended to a session whose chain does not verify, naming the broken step', async () => {
    await ingest(observe, session('s-broken-edit'));
    const { db } = observe.service.context.database;
    const edited = await db
      .selectFrom('events')
      .select(['id', 'payload'])
      .where('session_id', '=', 's-broken-edit')
      .where('seq', '=', 3)
      .executeTakeFirstOrThrow();
    await db
      .updateTable('events')
      .set({ payload: edited.payload.replace('db.delete', 'db.select') })
      .where('id', '=', edited.id)
      .execute();
    const before = await eventCount(observe);
    const body = assertErrorBody(await comply(observe, 's-broken-edit', { rules: [{ id: 'deny', type: 'tool_denylist', tools: ['db.delete'] }] }), 409);
    assert.match(body.error, new RegExp(`session "s-broken-edit" is broken at seq 3 \\(event ${edited.id}\\): hash does not match the event content`));
    assert.deepEqual(body.details, [{ path: 'brokenAt', message: `seq 3 (event ${edited.id}): hash does not match the event content` }]);
    assert.equal(await eventCount(observe), before, 'nothing appended');
  });

  test('409 chain_broken for a session with an event stored past its head (inserted directly, garbage hash)', async () => {
    await ingest(observe, session('s-broken-past-head'));
    const { database } = observe.service.context;
    const last = await database.db
      .selectFrom('events')
      .select('id')
      .where('session_id', '=', 's-broken-past-head')
      .where('seq', '=', 9)
      .executeTakeFirstOrThrow();
    const forgedId = 'ffffffff-ffff-7fff-bfff-ffffffffffff';
    await insertEventCopy(database, last.id, { id: forgedId, seq: 10, hash: Buffer.alloc(32) });
    const before = await eventCount(observe);
    const body = assertErrorBody(await comply(observe, 's-broken-past-head', { rules: [{ id: 'r', type: 'max_cost', maxUsd: 1 }] }), 409);
    assert.match(body.error, new RegExp(`broken at seq 10 \\(event ${forgedId}\\): .*past the session head`));
    assert.equal(await eventCount(observe), before);
  });
});

await describeEachDatabase('evaluators', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('create, list newest first, get, delete', async () => {
    const compliance = await observe.call({
      method: 'POST',
      url: '/api/evaluators',
      payload: { name: '  budget  ', kind: 'compliance', rules: [{ id: 'b', type: 'max_cost', maxUsd: 2 }] },
    });
    assert.equal(compliance.statusCode, 201, compliance.body);
    const c = compliance.json() as Json;
    assert.deepEqual(Object.keys(c).sort(), ['createdAt', 'id', 'kind', 'model', 'name', 'passThreshold', 'rubric', 'rules']);
    assert.deepEqual(c, {
      id: c.id,
      name: 'budget',
      kind: 'compliance',
      rules: [{ id: 'b', type: 'max_cost', maxUsd: 2 }],
      rubric: null,
      passThreshold: null,
      model: null,
      createdAt: '2026-11-22T10:00:00.000Z',
    });
    (observe.clock as { advance(ms: number): void }).advance(1000);
    const judge = await observe.call({
      method: 'POST',
      url: '/api/evaluators',
      payload: { name: 'polite', kind: 'llm_judge', rubric: 'The agent is polite.', passThreshold: 0.8, model: 'gpt-4.1-mini' },
    });
    assert.equal(judge.statusCode, 201, judge.body);
    const j = judge.json() as Json;
    assert.deepEqual(j, {
      id: j.id,
      name: 'polite',
      kind: 'llm_judge',
      rules: null,
      rubric: 'The agent is polite.',
      passThreshold: 0.8,
      model: 'gpt-4.1-mini',
      createdAt: '2026-11-22T10:00:01.000Z',
    });

    const list = (await observe.call({ method: 'GET', url: '/api/evaluators' })).json() as Json;
    assert.deepEqual(
      list.evaluators.map((e: Json) => e.id),
      [j.id, c.id],
    );
    assert.deepEqual(list.evaluators[1], c);
    assert.deepEqual((await observe.call({ method: 'GET', url: `/api/evaluators/${c.id}` })).json(), c);

    const deleted = await observe.call({ method: 'DELETE', url: `/api/evaluators/${c.id}` });
    assert.equal(deleted.statusCode, 200);
    assert.deepEqual(deleted.json(), { id: c.id, deleted: true });
    assertErrorBody(await observe.call({ method: 'GET', url: `/api/evaluators/${c.id}` }), 404);
    assertErrorBody(await observe.call({ method: 'DELETE', url: `/api/evaluators/${c.id}` }), 404);
    assert.deepEqual(
      ((await observe.call({ method: 'GET', url: '/api/evaluators' })).json() as Json).evaluators.map((e: Json) => e.id),
      [j.id],
    );
  });

  test('invalid evaluators are 400 and not stored', async () => {
    const before = ((await observe.call({ method: 'GET', url: '/api/evaluators' })).json() as Json).evaluators.length;
    const rules = [{ id: 'b', type: 'max_cost', maxUsd: 2 }];
    for (const body of [
      { name: 'x', kind: 'compliance' },
      { name: 'x', kind: 'llm_judge' },
      { name: 'x', kind: 'llm_judge', rubric: 'r', rules },
      { name: 'x', kind: 'compliance', rules, rubric: 'r' },
      { name: 'x', kind: 'compliance', rules, model: 'gpt-4o' },
      { name: 'x', kind: 'other', rules },
      { name: '', kind: 'compliance', rules },
      { kind: 'compliance', rules },
      { name: 'x', kind: 'compliance', rules: [{ id: 'b', type: 'max_cost', maxUsd: -2 }] },
      { name: 'x', kind: 'compliance', rules, passThreshold: 2 },
      { name: 'x', kind: 'llm_judge', rubric: 'r', model: 'no-such-model-anywhere' },
    ]) {
      assertErrorBody(await observe.call({ method: 'POST', url: '/api/evaluators', payload: body }), 400, JSON.stringify(body));
    }
    assert.equal(((await observe.call({ method: 'GET', url: '/api/evaluators' })).json() as Json).evaluators.length, before);
  });
});

const BREACH = '/api/internal/eval/guardrail-breach';
/** The body the approval service sends (gate/src/requests/breach.ts). */
const gateBreach = (sessionId: string, agentId = 'agent-b') => ({
  sessionId,
  agentId,
  breach: {
    ruleId: '01JPOLICY#0',
    ruleType: 'approval_policy',
    tool: 'rm.rf',
    reason: 'Denied by policy "no deletes" (01JPOLICY), rule 0',
    source: 'approval_gate',
  },
});

await describeEachDatabase('guardrail-breach endpoint', (backend) => {
  let observe: TestObserve;
  let unconfigured: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { env: { INTERNAL_SERVICE_TOKEN: SERVICE_TOKEN } });
    unconfigured = await startTestObserve(backend);
  });
  after(async () => {
    await observe.close();
    await unconfigured.close();
  });

  const post = (target: TestObserve, body: unknown, authorization?: string) =>
    target.service.app.inject({ method: 'POST', url: BREACH, payload: body as object, headers: authorization === undefined ? {} : { authorization } });

  test('503 while INTERNAL_SERVICE_TOKEN is unset, whatever the credentials', async () => {
    assertErrorBody(await post(unconfigured, gateBreach('s-x')), 503);
    assertErrorBody(await post(unconfigured, gateBreach('s-x'), `Bearer ${SERVICE_TOKEN}`), 503);
    assertErrorBody(await post(unconfigured, gateBreach('s-x'), `Bearer ${unconfigured.key}`), 503);
    assert.equal((await unconfigured.call({ method: 'GET', url: '/api/sessions/s-x' })).statusCode, 404);
  });

  test('401 without the token, with a wrong token, and with a valid API key', async () => {
    assertErrorBody(await post(observe, gateBreach('s-401')), 401);
    assertErrorBody(await post(observe, gateBreach('s-401'), `Bearer ${SERVICE_TOKEN}x`), 401);
    assertErrorBody(await post(observe, gateBreach('s-401'), `Bearer ${SERVICE_TOKEN.slice(0, -1)}`), 401);
    assertErrorBody(await post(observe, gateBreach('s-401'), SERVICE_TOKEN), 401);
    assertErrorBody(await post(observe, gateBreach('s-401'), `Bearer ${observe.key}`), 401);
    assert.equal((await observe.call({ method: 'GET', url: '/api/sessions/s-401' })).statusCode, 404);
  });

  test('201 {recorded, eventId}: a failed deterministic eval_result in a session created for it', async () => {
    const response = await post(observe, gateBreach('s-breach'), `Bearer ${SERVICE_TOKEN}`);
    assert.equal(response.statusCode, 201, response.body);
    const body = response.json() as Json;
    assert.deepEqual(Object.keys(body).sort(), ['eventId', 'recorded']);
    assert.equal(body.recorded, true);
    const session = (await observe.call({ method: 'GET', url: '/api/sessions/s-breach' })).json() as Json;
    assert.equal(session.agentId, 'agent-b');
    assert.equal(session.eventCount, 1);
    const [event] = await timeline(observe, 's-breach');
    assert.equal(event!.id, body.eventId);
    assert.equal(event!.eventType, 'eval_result');
    assert.equal(event!.seq, 0);
    assert.equal(event!.prevHash, null);
    assert.equal(event!.payload.method, 'deterministic');
    assert.equal(event!.payload.score, 0);
    assert.equal(event!.payload.passed, false);
    assert.equal(event!.payload.rulesEvaluated, 1);
    assert.deepEqual(event!.payload.breach, gateBreach('s-breach').breach);
    assert.deepEqual(event!.payload.violations, [
      { ruleId: '01JPOLICY#0', ruleType: 'approval_policy', detail: 'approval_gate denied tool rm.rf: Denied by policy "no deletes" (01JPOLICY), rule 0' },
    ]);
    assert.match(String(event!.payload.reasoning), /rule 01JPOLICY#0 denied tool rm\.rf/);
    assert.equal((await verify(observe, 's-breach')).valid, true);
  });

  test('a breach in an existing session extends its chain; the minimal body works too', async () => {
    await ingest(observe, [{ sessionId: 's-existing', agentId: 'agent-e', eventType: 'custom', payload: { type: 't', data: 1 } }]);
    const head = await verify(observe, 's-existing');
    const response = await post(
      observe,
      { sessionId: 's-existing', agentId: 'agent-e', breach: { ruleId: 'cost-cap', source: 'guardrail' } },
      `Bearer ${SERVICE_TOKEN}`,
    );
    assert.equal(response.statusCode, 201, response.body);
    const events = await timeline(observe, 's-existing');
    const last = events.at(-1)!;
    assert.equal(last.id, (response.json() as Json).eventId);
    assert.equal(last.prevHash, head.headHash);
    assert.equal((last.payload as Json).violations[0].ruleType, 'guardrail_breach');
    assert.deepEqual(last.payload.breach, { ruleId: 'cost-cap', source: 'guardrail' });
    const after = await verify(observe, 's-existing');
    assert.equal(after.valid, true);
    assert.equal(after.eventCount, 2);
  });

  test('a breach reported for a session whose chain is broken is refused with 409 and appends nothing', async () => {
    await ingest(observe, [
      { sessionId: 's-breach-broken', agentId: 'agent-e', eventType: 'custom', payload: { type: 't', data: 1 } },
      { sessionId: 's-breach-broken', agentId: 'agent-e', eventType: 'custom', payload: { type: 't', data: 2 } },
    ]);
    const { db } = observe.service.context.database;
    await db
      .updateTable('events')
      .set({ prev_hash: Buffer.alloc(32, 0xee) })
      .where('session_id', '=', 's-breach-broken')
      .where('seq', '=', 1)
      .execute();
    const before = await eventCount(observe);
    const body = assertErrorBody(await post(observe, gateBreach('s-breach-broken', 'agent-e'), `Bearer ${SERVICE_TOKEN}`), 409);
    assert.match(body.error, /session "s-breach-broken" is broken at seq 1 .*prevHash does not match/);
    assert.equal(await eventCount(observe), before);
  });

  test('AUTH_DISABLED does not open the service-token route', async () => {
    const open = await startTestObserve(backend, { env: { INTERNAL_SERVICE_TOKEN: SERVICE_TOKEN, AUTH_DISABLED: 'true' }, createKey: false });
    try {
      assertErrorBody(await post(open, gateBreach('s-open')), 401);
      assert.equal((await post(open, gateBreach('s-open'), `Bearer ${SERVICE_TOKEN}`)).statusCode, 201);
    } finally {
      await open.close();
    }
  });

  test('invalid bodies are 400 and store nothing', async () => {
    const before = await eventCount(observe);
    for (const body of [
      {},
      { sessionId: 's-bad', agentId: 'a' },
      { sessionId: 's-bad', agentId: 'a', breach: { source: 'x' } },
      { sessionId: 's-bad', agentId: 'a', breach: { ruleId: 'r' } },
      { sessionId: 's-bad', agentId: 'a', breach: { ruleId: 'r', source: 'x', extra: 1 } },
      { sessionId: '', agentId: 'a', breach: { ruleId: 'r', source: 'x' } },
      { sessionId: 's-bad', breach: { ruleId: 'r', source: 'x' } },
      { sessionId: 's-bad', agentId: 'a', breach: { ruleId: 'r', source: 'x', tool: 5 } },
    ]) {
      assertErrorBody(await post(observe, body, `Bearer ${SERVICE_TOKEN}`), 400, JSON.stringify(body));
    }
    assert.equal(await eventCount(observe), before);
  });
});
