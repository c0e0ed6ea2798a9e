import assert from 'node:assert/strict';
import { before, after, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { assertErrorBody, ingest, startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';
import type { ListLlmCallsQuery } from './schemas.ts';
import { llmCallsQuery } from './store.ts';

interface Call {
  id: string;
  timestamp: string;
  sessionId: string;
  agentId: string;
  provider: string | null;
  model: string | null;
  status: 'success' | 'error';
  inputTokens: number | null;
  outputTokens: number | null;
  totalTokens: number;
  costUsd: number | null;
  latencyMs: number | null;
}
interface Page {
  calls: Call[];
  nextCursor: string | null;
}

const iso = (at: number) => new Date(at).toISOString();

/** An llm_call and its llm_response; `n` orders the figures (cost, latency and tokens grow with it, except where given). */
function exchange(
  n: number,
  o: { session: string; agent: string; model: string; error?: boolean; subject?: string; cost?: number; latency?: number; tokens?: [number, number] },
) {
  const callId = `call-${n}`;
  const metadata = o.subject === undefined ? {} : { subjectId: o.subject };
  const at = TEST_NOW - 100_000 + n * 1000;
  return [
    {
      sessionId: o.session,
      agentId: o.agent,
      eventType: 'llm_call',
      timestamp: iso(at),
      metadata,
      payload: { callId, provider: 'openai', model: o.model, systemPrompt: 'Be brief.', messages: [{ role: 'user', content: `question ${n}` }] },
    },
    {
      sessionId: o.session,
      agentId: o.agent,
      eventType: 'llm_response',
      timestamp: iso(at + 500),
      severity: o.error ? 'error' : 'info',
      metadata,
      payload: {
        callId,
        provider: 'openai',
        model: o.model,
        completion: `answer ${n}`,
        finishReason: o.error ? 'error' : 'stop',
        usage: { inputTokens: o.tokens?.[0] ?? 100 * n, outputTokens: o.tokens?.[1] ?? 10 * n },
        costUsd: o.cost ?? 0.001 * n,
        latencyMs: o.latency ?? 100 * n,
      },
    },
  ];
}

async function list(observe: TestObserve, query: string): Promise<Page> {
  const response = await observe.call({ method: 'GET', url: `/api/llm-calls${query}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as Page;
}

/** Every page of a listing, following nextCursor. */
async function allPages(observe: TestObserve, query: string): Promise<Call[]> {
  const calls: Call[] = [];
  let cursor: string | null = null;
  do {
    const page = await list(observe, `${query}&limit=2${cursor === null ? '' : `&cursor=${cursor}`}`);
    assert.ok(page.calls.length <= 2);
    calls.push(...page.calls);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return calls;
}

await describeEachDatabase('GET /api/llm-calls', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
    await ingest(observe, [
      ...exchange(1, { session: 's1', agent: 'alpha', model: 'gpt-4o' }),
      ...exchange(2, { session: 's1', agent: 'alpha', model: 'gpt-4o-mini', error: true }),
      ...exchange(3, { session: 's2', agent: 'beta', model: 'gpt-4o', cost: 0.0001, latency: 900 }),
      ...exchange(4, { session: 's2', agent: 'beta', model: 'gpt-4o-mini', tokens: [1, 1] }),
      ...exchange(5, { session: 's3', agent: 'alpha', model: 'gpt-4o', subject: 'alice@example.com' }),
      { sessionId: 's3', agentId: 'alpha', eventType: 'custom', timestamp: iso(TEST_NOW - 1000), payload: { type: 'step', data: {} } },
    ]);
  });
  after(() => observe.close());

  test('lists only llm_response events, newest first, with their figures', async () => {
    const page = await list(observe, '');
    assert.equal(page.calls.length, 5);
    assert.equal(page.nextCursor, null);
    const [newest] = page.calls;
    assert.deepEqual(
      { ...newest, id: undefined },
      {
        id: undefined,
        timestamp: iso(TEST_NOW - 100_000 + 5000 + 500),
        sessionId: 's3',
        agentId: 'alpha',
        provider: 'openai',
        model: 'gpt-4o',
        status: 'success',
        finishReason: 'stop',
        inputTokens: 500,
        outputTokens: 50,
        totalTokens: 550,
        costUsd: 0.005,
        latencyMs: 500,
      },
    );
    assert.deepEqual(
      page.calls.map((c) => c.timestamp),
      page.calls
        .map((c) => c.timestamp)
        .sort()
        .reverse(),
    );
  });

  test('filters by model, agent, session and status, and combines them', async () => {
    const tokens = async (q: string) => (await list(observe, q)).calls.map((c) => c.inputTokens);
    assert.deepEqual(await tokens('?model=gpt-4o'), [500, 300, 100]);
    assert.deepEqual(await tokens('?agentId=beta'), [1, 300]);
    assert.deepEqual(await tokens('?sessionId=s1'), [200, 100]);
    assert.deepEqual(await tokens('?status=error'), [200]);
    assert.deepEqual(await tokens('?status=success&agentId=alpha&model=gpt-4o'), [500, 100]);
    assert.deepEqual(await tokens('?model=no-such-model'), []);
  });

  test('sorts by cost, latency, tokens and time, either way', async () => {
    const sorted = async (q: string) => (await list(observe, q)).calls.map((c) => c.inputTokens);
    assert.deepEqual(await sorted('?sort=cost&order=desc'), [500, 1, 200, 100, 300]);
    assert.deepEqual(await sorted('?sort=cost&order=asc'), [300, 100, 200, 1, 500]);
    assert.deepEqual(await sorted('?sort=latency&order=desc'), [300, 500, 1, 200, 100]);
    assert.deepEqual(await sorted('?sort=tokens&order=desc'), [500, 300, 200, 100, 1]);
    assert.deepEqual(await sorted('?sort=tokens&order=asc'), [1, 100, 200, 300, 500]);
    assert.deepEqual(await sorted('?sort=time&order=asc'), [100, 200, 300, 1, 500]);
    assert.deepEqual(await sorted('?sort=cost&model=gpt-4o'), [500, 100, 300]);
  });

  test('pages by cursor: every call once, in the order of one page', async () => {
    for (const q of ['?sort=time', '?sort=cost&order=asc', '?sort=latency', '?sort=tokens&order=asc', '?model=gpt-4o&sort=cost']) {
      const whole = (await list(observe, q)).calls.map((c) => c.id);
      const paged = (await allPages(observe, q)).map((c) => c.id);
      assert.deepEqual(paged, whole, q);
    }
    assert.equal((await allPages(observe, '?sort=cost')).length, 5);
  });

  test('bad input is a 400 in the error body; no key is a 401', async () => {
    const cursor = (await list(observe, '?sort=cost&limit=1')).nextCursor!;
    for (const q of ['?sort=price', '?order=up', '?status=ok', '?limit=0', '?limit=1000', '?cursor=not-a-cursor', `?sort=time&cursor=${cursor}`, '?model=']) {
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/llm-calls${q}` }), 400, q);
    }
    assertErrorBody(await observe.service.app.inject({ method: 'GET', url: '/api/llm-calls' }), 401);
    const [call] = (await list(observe, '')).calls;
    assertErrorBody(await observe.service.app.inject({ method: 'GET', url: `/api/llm-calls/${call!.id}` }), 401);
  });

  test("one call's detail: prompt, completion, tokens, cost and the price used", async () => {
    const [call] = (await list(observe, '?sessionId=s2&model=gpt-4o')).calls;
    const response = await observe.call({ method: 'GET', url: `/api/llm-calls/${call!.id}` });
    assert.equal(response.statusCode, 200, response.body);
    const detail = response.json();
    assert.equal(detail.content, 'readable');
    assert.equal(detail.promptContent, 'readable');
    assert.deepEqual(detail.prompt.messages, [{ role: 'user', content: 'question 3' }]);
    assert.equal(detail.prompt.systemPrompt, 'Be brief.');
    assert.equal(detail.completion, 'answer 3');
    assert.equal(detail.costUsd, 0.0001);
    assert.equal(detail.inputTokens, 300);
    assert.deepEqual(
      { ...detail.price, source: undefined },
      {
        provider: 'openai',
        model: 'gpt-4o',
        inputPerMillionUsd: 2.5,
        outputPerMillionUsd: 10,
        source: undefined,
        asOf: detail.price.asOf,
        // 300 × 2.5 / 1M + 30 × 10 / 1M
        costAtPriceUsd: 0.00105,
      },
    );
    assert.match(detail.price.source, /^https:\/\/openai\.com\//);
  });

  test('an unknown id, or an event that is no LLM response, is a 404', async () => {
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/llm-calls/no-such-call' }), 404);
    const { rows } = await sql<{ id: string }>`select id from events where event_type = 'custom'`.execute(observe.service.context.database.db);
    const answer = assertErrorBody(await observe.call({ method: 'GET', url: `/api/llm-calls/${rows[0]!.id}` }), 404);
    assert.equal(answer.code, 'llm_call_not_found');
  });

  test('an erased call keeps its figures in the list, and its detail shows no content', async () => {
    const [call] = (await list(observe, '?sessionId=s3')).calls;
    const erased = await observe.call({ method: 'DELETE', url: '/api/subjects/alice%40example.com', payload: { reason: 'test' } });
    assert.equal(erased.statusCode, 200, erased.body);
    const [after] = (await list(observe, '?sessionId=s3')).calls;
    assert.deepEqual(after, call);
    const detail = (await observe.call({ method: 'GET', url: `/api/llm-calls/${call!.id}` })).json();
    assert.equal(detail.content, 'erased');
    assert.equal(detail.promptContent, 'erased');
    assert.equal(detail.prompt, null);
    assert.equal(detail.completion, null);
    assert.ok(!JSON.stringify(detail).includes('question 5') && !JSON.stringify(detail).includes('answer 5'));
  });
});

/** The plan of a page's query: SQLite's EXPLAIN QUERY PLAN; PostgreSQL's EXPLAIN with sequential scans, bitmap scans and sorts made costly (its tables here are too small for it to prefer an index otherwise; a sort no index can spare still shows). */
async function planOf(observe: TestObserve, query: ListLlmCallsQuery): Promise<string> {
  const { db, dialect } = observe.service.context.database;
  const compiled = llmCallsQuery(db, query).compile();
  if (dialect === 'sqlite') {
    const { rows } = await db.executeQuery<{ detail: string }>({ ...compiled, sql: `explain query plan ${compiled.sql}` });
    return rows.map((row) => row.detail).join(' | ');
  }
  return db.transaction().execute(async (trx) => {
    for (const setting of ['enable_seqscan', 'enable_bitmapscan', 'enable_sort']) await sql`select set_config(${setting}, 'off', true)`.execute(trx);
    const { rows } = await trx.executeQuery<{ 'QUERY PLAN': string }>({ ...compiled, sql: `explain ${compiled.sql}` });
    // events is partitioned (events/partitions.ts): each partition's scan is named by the index of events it belongs to.
    const children = await sql<{ child: string; parent: string; partition: string }>`select c.relname as child, p.relname as parent, t.relname as partition
      from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent join pg_index x on x.indexrelid = c.oid
      join pg_class t on t.oid = x.indrelid where p.relkind = 'I'`.execute(trx);
    const parents = new Map(children.rows.map((row) => [`${row.child} on ${row.partition}`, `${row.parent} on events`]));
    return rows.map((row) => row['QUERY PLAN'].replace(/(?<=using )(\S+ on \S+)/, (scan) => parents.get(scan) ?? scan)).join(' | ');
  });
}

await describeEachDatabase('GET /api/llm-calls query plans', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  // Every filter and sort reads one index of migration 0041, never the whole events table, and is
  // not sorted after. A filter with another sort than time reads the filter's index and sorts what
  // it narrowed, or the sort's index filtered (each database decides which).
  test('each filter and sort reads an index of migration 0041', async () => {
    const plans: [query: Partial<ListLlmCallsQuery>, index: string, sorts?: boolean][] = [
      [{}, 'llm_calls_ts', false],
      [{ sort: 'cost' }, 'llm_calls_cost', false],
      [{ sort: 'latency', order: 'asc' }, 'llm_calls_latency', false],
      [{ sort: 'tokens' }, 'llm_calls_tokens', false],
      [{ sort: 'cost', cursor: { sort: 'cost', value: 0.5, id: 'x' } }, 'llm_calls_cost', false],
      [{ model: 'gpt-4o' }, 'llm_calls_model', false],
      [{ agentId: 'alpha', cursor: { sort: 'time', value: TEST_NOW, id: 'x' } }, 'llm_calls_agent', false],
      [{ sessionId: 's1' }, 'llm_calls_session', false],
      [{ status: 'error' }, 'llm_calls_status', false],
      [{ model: 'gpt-4o', sort: 'cost' }, '(llm_calls_model|llm_calls_cost)'],
    ];
    for (const [partial, index, sorts] of plans) {
      const plan = await planOf(observe, { sort: 'time', order: 'desc', limit: 50, ...partial });
      const label = `${backend.kind} ${JSON.stringify(partial)}: ${plan}`;
      assert.match(
        plan,
        backend.kind === 'sqlite' ? new RegExp(`USING (COVERING )?INDEX ${index}\\b`) : new RegExp(`Index (Only )?Scan (Backward )?using ${index} on events`),
        label,
      );
      // A Sort node (not the Merge Append's "Sort Key" that merges the partitions' index orders).
      if (sorts !== undefined) assert.equal(backend.kind === 'sqlite' ? /TEMP B-TREE/.test(plan) : /\bSort\s+\(cost/.test(plan), sorts, label);
    }
  });
});
