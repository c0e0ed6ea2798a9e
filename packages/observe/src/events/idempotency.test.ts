// POST /api/events with an Idempotency-Key (docs/api.md#idempotent-ingest): a replay answers the
// stored answer and stores nothing, on both databases, within one instance and across two.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { LightMyRequestResponse } from 'fastify';
import { assertErrorBody, clockOf, startTestObserve, type TestObserve } from '../testing.ts';

const DAY_MS = 24 * 60 * 60_000;

const toolCall = (sessionId: string, callId: string) => ({
  sessionId,
  agentId: 'agent-idem',
  eventType: 'tool_call',
  payload: { toolName: 'search', callId, arguments: { q: 'weather in Paris' } },
});

const batch = (sessionId: string, ...callIds: string[]) => ({ events: callIds.map((callId) => toolCall(sessionId, callId)) });

async function storedEvents(observe: TestObserve, sessionId: string): Promise<number> {
  const row = await observe.service.context.database.db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('session_id', '=', sessionId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function storedKeys(observe: TestObserve): Promise<number> {
  const row = await observe.service.context.database.db
    .selectFrom('idempotency_keys')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

const post = (observe: TestObserve, key: string | undefined, body: unknown, authorization?: string): Promise<LightMyRequestResponse> =>
  observe.call({
    method: 'POST',
    url: '/api/events',
    payload: body as Record<string, unknown>,
    headers: { ...(key !== undefined && { 'idempotency-key': key }), ...(authorization !== undefined && { authorization }) },
  });

await describeEachDatabase('POST /api/events with Idempotency-Key', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('a repeat answers the stored answer with Idempotent-Replayed: true and stores nothing', async () => {
    const body = batch('s-replay', 'a', 'b');
    const first = await post(observe, 'key-replay', body);
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    assert.equal(await storedEvents(observe, 's-replay'), 2);

    const again = await post(observe, 'key-replay', body);
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body, first.body);
    assert.equal(await storedEvents(observe, 's-replay'), 2);
  });

  test('the same key with a different body is a 422 and stores nothing', async () => {
    assert.equal((await post(observe, 'key-reused', batch('s-reused', 'a'))).statusCode, 201);
    const other = await post(observe, 'key-reused', batch('s-reused', 'b'));
    const error = assertErrorBody(other, 422);
    assert.match(error.error, /Idempotency-Key/);
    assert.equal(await storedEvents(observe, 's-reused'), 1);
  });

  test('concurrent requests with one key store the batch once; the others get its answer or 409 with Retry-After', async () => {
    const body = batch('s-concurrent', 'a', 'b', 'c');
    const answers = await Promise.all(Array.from({ length: 6 }, () => post(observe, 'key-concurrent', body)));
    const fresh = answers.filter((a) => a.statusCode === 201 && a.headers['idempotent-replayed'] === undefined);
    assert.equal(fresh.length, 1, answers.map((a) => `${a.statusCode} ${a.body}`).join('\n'));
    for (const answer of answers) {
      if (answer.statusCode === 409) {
        assert.equal(answer.headers['retry-after'], '1');
        assertErrorBody(answer, 409);
      } else {
        assert.equal(answer.statusCode, 201, answer.body);
        assert.equal(answer.body, fresh[0]!.body);
      }
    }
    assert.equal(await storedEvents(observe, 's-concurrent'), 3);
  });

  test('a bad key is a 400 and stores nothing', async () => {
    for (const bad of ['', 'x'.repeat(256), 'tab\there', 'caf\u00e9']) {
      const response = await post(observe, bad, batch('s-bad-key', 'a'));
      const error = assertErrorBody(response, 400, JSON.stringify(bad));
      assert.match(error.error, /idempotency-key/i);
    }
    assert.equal(await storedEvents(observe, 's-bad-key'), 0);
    // The bounds themselves are accepted: 255 printable characters, spaces inside included.
    assert.equal((await post(observe, `${'k'.repeat(127)} ${'~'.repeat(127)}`, batch('s-bad-key', 'a'))).statusCode, 201);
  });

  test('keys are per API key: the same key from another API key is another batch', async () => {
    const created = await observe.call({ method: 'POST', url: '/api/keys', payload: { name: 'agent-two', scopes: ['ingest'] } });
    const other = `Bearer ${(created.json() as { key: string }).key}`;
    assert.equal((await post(observe, 'key-shared', batch('s-scoped', 'a'))).statusCode, 201);
    const second = await post(observe, 'key-shared', batch('s-scoped', 'b'), other);
    assert.equal(second.statusCode, 201, second.body);
    assert.equal(second.headers['idempotent-replayed'], undefined);
    assert.equal(await storedEvents(observe, 's-scoped'), 2);
  });

  test('a failed batch keeps no key: the corrected request with the same key is stored', async () => {
    const refused = await post(observe, 'key-after-400', { events: [{ ...toolCall('s-after-400', 'a'), payload: { toolName: 'x' } }] });
    assertErrorBody(refused, 400);
    const accepted = await post(observe, 'key-after-400', batch('s-after-400', 'a'));
    assert.equal(accepted.statusCode, 201, accepted.body);
    assert.equal(await storedEvents(observe, 's-after-400'), 1);
  });

  test('a key expires after 24 hours: the job deletes it and the key is then free again', async () => {
    const clock = clockOf(observe);
    const body = batch('s-expiry', 'a');
    assert.equal((await post(observe, 'key-expiry', body)).statusCode, 201);
    clock.advance(DAY_MS - 1);
    assert.equal((await post(observe, 'key-expiry', body)).headers['idempotent-replayed'], 'true');
    const keysBefore = await storedKeys(observe);
    clock.advance(1);
    // Expired but not yet swept: no longer answered; the new batch takes the key over.
    const after24h = await post(observe, 'key-expiry', body);
    assert.equal(after24h.statusCode, 201);
    assert.equal(after24h.headers['idempotent-replayed'], undefined);
    assert.equal(await storedEvents(observe, 's-expiry'), 2);
    assert.equal(await storedKeys(observe), keysBefore);

    clock.advance(DAY_MS);
    assert.equal(await observe.service.jobs.idempotencyKeys.tick(), true);
    assert.equal(await storedKeys(observe), 0);
    assert.equal((await post(observe, 'key-expiry', body)).headers['idempotent-replayed'], undefined);
    assert.equal(await storedEvents(observe, 's-expiry'), 3);
  });
});

await describeEachDatabase('Idempotency-Key across two instances on one database', (backend) => {
  let first: TestObserve;
  let second: TestObserve;
  before(async () => {
    first = await startTestObserve(backend);
    second = await startTestObserve(backend, { database: first.config.database, createKey: false });
  });
  after(async () => {
    await second.close();
    await first.close();
  });

  test('concurrent requests through both instances store the batch once; either answers the replay', async () => {
    const viaSecond = (key: string, body: unknown) => post(second, key, body, `Bearer ${first.key}`);
    for (let round = 0; round < 5; round++) {
      const sessionId = `s-two-${round}`;
      const body = batch(sessionId, 'a', 'b');
      const answers = await Promise.all([post(first, `two-${round}`, body), viaSecond(`two-${round}`, body), post(first, `two-${round}`, body)]);
      const fresh = answers.filter((a) => a.statusCode === 201 && a.headers['idempotent-replayed'] === undefined);
      assert.equal(fresh.length, 1, answers.map((a) => `${a.statusCode} ${a.body}`).join('\n'));
      for (const answer of answers) if (answer.statusCode !== 409) assert.equal(answer.body, fresh[0]!.body);
      assert.equal(await storedEvents(first, sessionId), 2);
      const replayed = await viaSecond(`two-${round}`, body);
      assert.equal(replayed.headers['idempotent-replayed'], 'true');
      assert.equal(replayed.body, fresh[0]!.body);
    }
  });
});
