import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { ago, assertErrorBody, ingest, started, startTestObserve, type TestObserve, toolCall } from '../testing.ts';

interface Agent {
  id: string;
  name: string;
  firstSeenAt: string;
  lastSeenAt: string;
  sessionCount: number;
  pausedAt: string | null;
  pauseReason: string | null;
  modelOverride: string | null;
  approvalPolicyId: string | null;
}

const AGENT_FIELDS = ['approvalPolicyId', 'firstSeenAt', 'id', 'lastSeenAt', 'modelOverride', 'name', 'pauseReason', 'pausedAt', 'sessionCount'];

async function getAgent(observe: TestObserve, id: string): Promise<Agent> {
  const response = await observe.call({ method: 'GET', url: `/api/agents/${id}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as Agent;
}

await describeEachDatabase('GET /api/agents', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
    await ingest(observe, [
      started('s-a1', 'alpha', ago(120), { agentName: 'Alpha Bot' }),
      toolCall('s-a1', 'alpha', ago(110)),
      toolCall('s-b1', 'beta', ago(90)),
    ]);
    // A later batch to a known session does not count a new session; a new session does.
    await ingest(observe, [toolCall('s-a1', 'alpha', ago(100)), toolCall('s-a2', 'alpha', ago(30))]);
    // Out-of-order timestamps: firstSeenAt is the earliest event, lastSeenAt the latest.
    await ingest(observe, [toolCall('s-a3', 'alpha', ago(150)), toolCall('s-b1', 'beta', ago(95))]);
  });
  after(() => observe.close());

  test('starts empty on a fresh database', async () => {
    const fresh = await startTestObserve(backend);
    try {
      const response = await fresh.call({ method: 'GET', url: '/api/agents' });
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), { agents: [] });
    } finally {
      await fresh.close();
    }
  });

  test('lists every agent with its record', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/agents' });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as { agents: Agent[] };
    assert.deepEqual(Object.keys(body), ['agents']);
    const agents = [...body.agents].sort((a, b) => a.id.localeCompare(b.id));
    for (const agent of agents) assert.deepEqual(Object.keys(agent).sort(), AGENT_FIELDS);
    assert.deepEqual(agents, [
      {
        id: 'alpha',
        name: 'Alpha Bot',
        firstSeenAt: ago(150),
        lastSeenAt: ago(30),
        sessionCount: 3,
        pausedAt: null,
        pauseReason: null,
        modelOverride: null,
        approvalPolicyId: null,
      },
      {
        id: 'beta',
        name: 'beta',
        firstSeenAt: ago(95),
        lastSeenAt: ago(90),
        sessionCount: 1,
        pausedAt: null,
        pauseReason: null,
        modelOverride: null,
        approvalPolicyId: null,
      },
    ]);
  });

  test('GET /api/agents/:id returns the same record; unknown is 404', async () => {
    const list = (await observe.call({ method: 'GET', url: '/api/agents' })).json() as { agents: Agent[] };
    for (const agent of list.agents) assert.deepEqual(await getAgent(observe, agent.id), agent);
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/agents/no-such-agent' }), 404);
  });

  test('a session_started with a new agentName renames the agent; events without one keep it', async () => {
    await ingest(observe, [started('s-g1', 'gamma', ago(20))]);
    assert.equal((await getAgent(observe, 'gamma')).name, 'gamma');
    await ingest(observe, [started('s-g2', 'gamma', ago(10), { agentName: 'Gamma v2' })]);
    assert.equal((await getAgent(observe, 'gamma')).name, 'Gamma v2');
    await ingest(observe, [toolCall('s-g3', 'gamma', ago(5)), started('s-g4', 'gamma', ago(4))]);
    const gamma = await getAgent(observe, 'gamma');
    assert.equal(gamma.name, 'Gamma v2');
    assert.equal(gamma.sessionCount, 4);
    assert.equal(gamma.firstSeenAt, ago(20));
    assert.equal(gamma.lastSeenAt, ago(4));
  });

  test('batches inside the span already recorded (whose agents write ingest skips) leave the record equal to a recomputation from the events', async () => {
    const steps: unknown[][] = [
      [toolCall('s-d1', 'delta', ago(50)), toolCall('s-d1', 'delta', ago(40))],
      // Inside the recorded span, known session: nothing to change.
      [toolCall('s-d1', 'delta', ago(45))],
      // Inside the span but a new session: counted.
      [toolCall('s-d2', 'delta', ago(44))],
      [toolCall('s-d1', 'delta', ago(43))],
      // Before and after the span.
      [toolCall('s-d1', 'delta', ago(60))],
      [toolCall('s-d2', 'delta', ago(35))],
      // A name inside the span.
      [started('s-d1', 'delta', ago(42), { agentName: 'Delta' })],
      [toolCall('s-d2', 'delta', ago(41))],
    ];
    const db = observe.service.context.database.db;
    for (const step of steps) {
      await ingest(observe, step);
      const events = await db.selectFrom('events').select(['ts', 'session_id']).where('agent_id', '=', 'delta').execute();
      const times = events.map((e) => Number(e.ts));
      const agent = await getAgent(observe, 'delta');
      assert.equal(agent.firstSeenAt, new Date(Math.min(...times)).toISOString());
      assert.equal(agent.lastSeenAt, new Date(Math.max(...times)).toISOString());
      assert.equal(agent.sessionCount, new Set(events.map((e) => e.session_id)).size);
    }
    assert.equal((await getAgent(observe, 'delta')).name, 'Delta');
  });
});

await describeEachDatabase('POST /api/agents/:id/resume', (backend) => {
  let observe: TestObserve;
  const pausedAt = Date.parse(ago(5));

  async function pause(id: string, modelOverride: string | null): Promise<void> {
    await observe.service.context.database.db
      .updateTable('agents')
      .set({ paused_at: pausedAt, pause_reason: 'cost limit exceeded', model_override: modelOverride })
      .where('id', '=', id)
      .execute();
  }

  before(async () => {
    observe = await startTestObserve(backend);
    await ingest(observe, [started('s-p1', 'pauser', ago(60), { agentName: 'Pauser' }), toolCall('s-p1', 'pauser', ago(59))]);
  });
  after(() => observe.close());

  test('the agent record shows a pause set in the database', async () => {
    await pause('pauser', 'gpt-4o-mini');
    const agent = await getAgent(observe, 'pauser');
    assert.equal(agent.pausedAt, new Date(pausedAt).toISOString());
    assert.equal(agent.pauseReason, 'cost limit exceeded');
    assert.equal(agent.modelOverride, 'gpt-4o-mini');
    assert.equal(agent.approvalPolicyId, null);
  });

  test('events of a paused agent are still accepted and stored', async () => {
    await pause('pauser', 'gpt-4o-mini');
    await ingest(observe, [toolCall('s-p1', 'pauser', ago(3))]);
    const session = (await observe.call({ method: 'GET', url: '/api/sessions/s-p1' })).json() as { eventCount: number };
    assert.equal(session.eventCount, 3);
    const agent = await getAgent(observe, 'pauser');
    assert.notEqual(agent.pausedAt, null);
    assert.equal(agent.lastSeenAt, ago(3));
  });

  test('resume clears the pause and keeps the model override (empty body, clearModelOverride false)', async () => {
    for (const payload of [{}, { clearModelOverride: false }]) {
      await pause('pauser', 'gpt-4o-mini');
      const response = await observe.call({ method: 'POST', url: '/api/agents/pauser/resume', payload });
      assert.equal(response.statusCode, 200, `${JSON.stringify(payload)}: ${response.body}`);
      const agent = response.json() as Agent;
      assert.deepEqual(Object.keys(agent).sort(), AGENT_FIELDS);
      assert.equal(agent.id, 'pauser');
      assert.equal(agent.name, 'Pauser');
      assert.equal(agent.pausedAt, null);
      assert.equal(agent.pauseReason, null);
      assert.equal(agent.modelOverride, 'gpt-4o-mini');
      assert.deepEqual(await getAgent(observe, 'pauser'), agent);
    }
  });

  test('resume without a request body clears the pause and keeps the model override', async () => {
    // The body `{clearModelOverride?}` is optional: a plain POST with no body at all resumes.
    await pause('pauser', 'gpt-4o-mini');
    const response = await observe.call({ method: 'POST', url: '/api/agents/pauser/resume' });
    assert.equal(response.statusCode, 200, response.body);
    const agent = response.json() as Agent;
    assert.equal(agent.pausedAt, null);
    assert.equal(agent.pauseReason, null);
    assert.equal(agent.modelOverride, 'gpt-4o-mini');
  });

  test('resume with clearModelOverride:true also clears the model override', async () => {
    await pause('pauser', 'claude-haiku');
    const response = await observe.call({ method: 'POST', url: '/api/agents/pauser/resume', payload: { clearModelOverride: true } });
    assert.equal(response.statusCode, 200, response.body);
    const agent = response.json() as Agent;
    assert.equal(agent.pausedAt, null);
    assert.equal(agent.pauseReason, null);
    assert.equal(agent.modelOverride, null);
    const stored = await getAgent(observe, 'pauser');
    assert.equal(stored.modelOverride, null);
    assert.equal(stored.pausedAt, null);
  });

  test('resuming an agent that is not paused answers its record unchanged', async () => {
    const before = await getAgent(observe, 'pauser');
    const response = await observe.call({ method: 'POST', url: '/api/agents/pauser/resume', payload: {} });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), before);
  });

  test('an unknown agent is 404', async () => {
    assertErrorBody(await observe.call({ method: 'POST', url: '/api/agents/no-such-agent/resume', payload: {} }), 404);
  });

  test('clearModelOverride must be a boolean: 400, and nothing changes', async () => {
    await pause('pauser', 'gpt-4o-mini');
    for (const payload of [{ clearModelOverride: 'yes' }, { clearModelOverride: 1 }]) {
      assertErrorBody(await observe.call({ method: 'POST', url: '/api/agents/pauser/resume', payload }), 400);
    }
    const agent = await getAgent(observe, 'pauser');
    assert.equal(agent.pausedAt, new Date(pausedAt).toISOString());
    assert.equal(agent.modelOverride, 'gpt-4o-mini');
  });
});
