// POST /api/audit/evidence-pack on both databases: the pack `vigil evidence` writes, built by this
// observe (its parts in process, with the caller's credential) and its gate (GATE_URL, with the
// credential of X-Vigil-Gate-Authorization); refused reads are a 502 naming them, bad periods a 400.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { startTestGate, TEST_ADMIN_KEY } from '@vigil/gate/testing';
import { assertErrorBody, clockOf, ingest, started, startTestObserve } from '../testing.ts';
import { readContainer } from './container.ts';

await describeEachDatabase('POST /api/audit/evidence-pack', (backend) => {
  test("builds the signed pack of a period from observe and its gate, each read with the caller's credential", async () => {
    const gate = await startTestGate(backend);
    await gate.service.app.listen({ host: '127.0.0.1', port: 0 });
    const gateUrl = `http://127.0.0.1:${(gate.service.app.server.address() as AddressInfo).port}`;
    const observe = await startTestObserve(backend, { env: { GATE_URL: gateUrl } });
    try {
      const at = new Date(clockOf(observe).now()).toISOString();
      await ingest(observe, [started('s1', 'agent-a', at)]);
      assert.equal((await observe.call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);
      const created = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'pay', params: {}, context: { agentId: 'agent-a' } } });
      assert.equal(created.statusCode, 201, created.body);
      const period = { from: new Date(Date.parse(at) - 60_000).toISOString(), to: new Date(Date.parse(at) + 60_000).toISOString() };
      const pack = (headers: Record<string, string>, payload: object = period) =>
        observe.call({ method: 'POST', url: '/api/audit/evidence-pack', payload, headers });

      const built = await pack({ 'x-vigil-gate-authorization': `Bearer ${TEST_ADMIN_KEY}` });
      assert.equal(built.statusCode, 200, built.body);
      const answer = built.json<{ fileName: string; files: number; content: string }>();
      assert.match(answer.fileName, /^vigil-evidence-.+\.jsonl$/);
      const { files, unreadable } = readContainer(answer.content);
      assert.deepEqual(unreadable, []);
      assert.equal(files.length, answer.files);
      const byPath = new Map(files.map((file) => [file.path, file.content]));
      const oversight = JSON.parse(byPath.get('parts/oversight.json')!) as { requests: { request: { id: string } }[] };
      assert.deepEqual(
        oversight.requests.map((r) => r.request.id),
        [created.json<{ id: string }>().id],
      );
      const signatures = JSON.parse(byPath.get('signatures.json')!) as { signatures: { log: string }[] };
      assert.deepEqual(signatures.signatures.map((s) => s.log).sort(), ['vigil-gate', 'vigil-observe']);

      // Without the gate's credential the pack holds observe's parts only.
      const observeOnly = await pack({});
      assert.equal(observeOnly.statusCode, 200, observeOnly.body);
      assert.equal(
        JSON.parse(new Map(readContainer(observeOnly.json<{ content: string }>().content).files.map((f) => [f.path, f.content])).get('parts/oversight.json')!),
        null,
      );

      // A gate credential the gate refuses: a 502 naming the read.
      const refused = await pack({ 'x-vigil-gate-authorization': 'Bearer gk_not_a_key' });
      const error = assertErrorBody(refused, 502);
      assert.equal(refused.json<{ code: string }>().code, 'evidence_read_failed');
      assert.match(error.error, /gate: GET \/api\/audit\/public-key answered 401/);
      // A period backwards, or not a time: 400.
      assertErrorBody(await pack({}, { from: period.to, to: period.from }), 400);
      assertErrorBody(await pack({}, { from: 'last week', to: period.to }), 400);
    } finally {
      await observe.close();
      await gate.close();
    }
  });
});
