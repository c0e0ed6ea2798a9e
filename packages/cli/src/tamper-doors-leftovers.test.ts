/**
 * The doors issue 36 left open after its first pass, on both databases: a change-log row inserted
 * without its leaf (both services), a cut tail or a rewritten writer that the timeline's and
 * replay's `chainValid` did not see, and a request trail cut at its tail that the gate's own verify
 * passed. Each is tampered after the auditor saved a checkpoint.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import { startTestGate, TEST_ADMIN_KEY, type TestGate } from '@vigil/gate/testing';
import type { Checkpoint } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { ago, custom, ingestEvents, started, startTestObserve } from '@vigil/observe/testing';
import { world, type World } from './tamper-observe-testkit.ts';
import { runVerify, type Report } from './verify-testkit.ts';

/** A change row as the published columns spell it, written straight into the database. */
const forgedChange = <Resource extends string>(now: number, resource: Resource) => ({
  id: 'forged-change',
  ts: now,
  resource,
  resource_id: 'forged-resource',
  action: 'created',
  actor: 'api:admin',
  actor_key_id: null,
  actor_key_name: null,
  before: null,
  after: '{}',
  state_hash: null,
});

/** `vigil verify` with the saved checkpoint: exit 1 and a change-unlogged finding naming the row. */
async function assertUnloggedChange(url: string, saved: string, key: string): Promise<void> {
  const result = await runVerify<Report>(['--url', url, '--checkpoint', saved], key);
  assert.equal(result.status, 1, `exit 1 (tampered): ${result.stderr}\n${JSON.stringify(result.report)}`);
  const finding = result.report.findings.find((f) => f.check === 'change-unlogged');
  assert.ok(finding, `a change-unlogged finding: ${JSON.stringify(result.report.findings)}`);
  assert.match(finding.message, /forged-change/);
}

async function inWorld(backend: Parameters<typeof world>[0], body: (w: World) => Promise<void>): Promise<void> {
  const w = await world(backend);
  try {
    await body(w);
  } finally {
    await w.observe.close();
    rmSync(w.dir, { recursive: true, force: true });
  }
}

interface Verdicts {
  timeline: boolean;
  replay: boolean;
  verify: boolean;
}

async function chainValidEverywhere(w: World, sessionId: string): Promise<Verdicts> {
  const answer = async (url: string) => {
    const response = await w.observe.call({ method: 'GET', url });
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
    return response.json<{ chainValid?: boolean; valid?: boolean }>();
  };
  return {
    timeline: (await answer(`/api/sessions/${sessionId}/timeline`)).chainValid!,
    replay: (await answer(`/api/sessions/${sessionId}/replay`)).chainValid!,
    verify: (await answer(`/api/audit/verify?sessionId=${sessionId}`)).valid!,
  };
}

await describeEachDatabase('tamper doors (issue 36, leftovers): observe', (backend) => {
  test('a change-log row inserted without its leaf: vigil verify names it (exit 1)', async () => {
    await inWorld(backend, async (w) => {
      const valid = await runVerify<Report>(['--url', w.url, '--checkpoint', w.saved], w.observe.key);
      assert.equal(valid.status, 0, `valid before: ${JSON.stringify(valid.report.findings)}`);
      await w.observe.service.context.database.db.insertInto('admin_changes').values(forgedChange(w.observe.clock.now(), 'settings')).execute();
      await assertUnloggedChange(w.url, w.saved, w.observe.key);
    });
  });

  test("a leaf's kind rewritten (a change leaf stored as an event's): vigil verify names the leaf (exit 1)", async () => {
    await inWorld(backend, async (w) => {
      const response = await w.observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 400 } });
      assert.equal(response.statusCode, 200, response.body);
      const { db } = w.observe.service.context.database;
      const change = await db.selectFrom('admin_changes').select('id').where('resource', '=', 'settings').executeTakeFirstOrThrow();
      const leaf = await db.selectFrom('audit_log_leaves').select(['idx', 'kind']).where('item_id', '=', change.id).executeTakeFirstOrThrow();
      assert.equal(leaf.kind, 'change', 'the kind is written with the leaf');
      await db.updateTable('audit_log_leaves').set({ kind: 'event' }).where('idx', '=', leaf.idx).execute();
      const result = await runVerify<Report>(['--url', w.url, '--checkpoint', w.saved], w.observe.key);
      assert.equal(result.status, 1, `exit 1: ${result.stderr}\n${JSON.stringify(result.report)}`);
      const finding = result.report.findings.find((f) => f.check === 'leaf-kind');
      assert.ok(finding, JSON.stringify(result.report.findings));
      assert.equal(finding.leafIndex, Number(leaf.idx));
      assert.match(finding.message, /is stored as kind event, but it is a change leaf/);
    });
  });

  test('a tail cut under a rewritten head: the timeline, the replay and the verify all say chainValid false', async () => {
    await inWorld(backend, async (w) => {
      // Read once before, so a remembered verdict is what the tampering has to get past.
      assert.deepEqual(await chainValidEverywhere(w, 't-a'), { timeline: true, replay: true, verify: true });
      const { db } = w.observe.service.context.database;
      await db.deleteFrom('events').where('id', 'in', [w.acks.a[4]!.id, w.acks.a[5]!.id]).execute();
      await db.updateTable('sessions').set({ last_seq: 3, last_hash: w.acks.a[3]!.hash }).where('id', '=', 't-a').execute();
      assert.deepEqual(await chainValidEverywhere(w, 't-a'), { timeline: false, replay: false, verify: false });
    });
  });

  test("an event's writer rewritten in the database: the timeline, the replay and the verify all say chainValid false", async () => {
    await inWorld(backend, async (w) => {
      assert.deepEqual(await chainValidEverywhere(w, 't-b'), { timeline: true, replay: true, verify: true });
      await w.observe.service.context.database.db
        .updateTable('events')
        .set({ written_by: 'webhook:approval_gate' })
        .where('id', '=', w.acks.b[2]!.id)
        .execute();
      assert.deepEqual(await chainValidEverywhere(w, 't-b'), { timeline: false, replay: false, verify: false });
    });
  });
});

const pem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;

await describeEachDatabase('verify a bundle offline across a certified key rotation', (backend) => {
  test('a bundle signed after a rotation verifies with only the original pinned key; a forged certificate does not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigil-bundle-rotation-'));
    const oldKey = pem();
    const before = await startTestObserve(backend, { env: { AUDIT_SIGNING_KEY: oldKey } });
    let after: Awaited<ReturnType<typeof startTestObserve>> | undefined;
    try {
      await ingestEvents(before, [started('br-a', 'agent', ago(30)), custom('br-a', 'agent', ago(29))]);
      const pinned = (await before.call({ method: 'GET', url: '/api/audit/public-key' })).json<{ publicKey: string }>().publicKey;
      await before.close();
      const rotated = await startTestObserve(backend, {
        env: { AUDIT_SIGNING_KEY: pem(), AUDIT_PREVIOUS_SIGNING_KEY: oldKey },
        database: before.config.database,
        createKey: false,
      });
      after = rotated;
      const call = (url: string, method: 'GET' | 'POST' = 'GET', payload?: Record<string, unknown>) =>
        rotated.service.app.inject({ method, url, headers: { authorization: `Bearer ${before.key}` }, ...(payload === undefined ? {} : { payload }) });
      assert.equal((await call('/api/events', 'POST', { events: [custom('br-a', 'agent', ago(20))] })).statusCode, 201);
      const exported = await call('/api/audit/export?sessionId=br-a');
      assert.equal(exported.statusCode, 200, exported.body);
      const bundle = exported.json<{ publicKey: string; certificates: { body: string }[] }>();
      assert.notEqual(bundle.publicKey, pinned, 'the bundle is signed by the new key');
      assert.equal(bundle.certificates.length, 1);
      const file = join(dir, 'bundle.json');
      writeFileSync(file, exported.body);
      const offline = await runVerify<Report>([file, '--public-key', pinned], before.key);
      assert.equal(offline.status, 0, `valid offline: ${offline.stderr}\n${JSON.stringify(offline.report)}`);
      assert.ok(
        offline.report.notes.some((note) => note.includes('is trusted: certified by key')),
        JSON.stringify(offline.report.notes),
      );

      // A certificate rewritten in the bundle (another timestamp) no longer carries the old key's signature: the new key is not trusted.
      const forged = {
        ...bundle,
        certificates: [
          { ...bundle.certificates[0]!, body: bundle.certificates[0]!.body.replace(/"timestamp":"[^"]+"/, '"timestamp":"2020-01-01T00:00:00.000Z"') },
        ],
      };
      writeFileSync(file, JSON.stringify(forged));
      const refused = await runVerify<Report>([file, '--public-key', pinned], before.key);
      assert.equal(refused.status, 1, `${refused.stderr}\n${JSON.stringify(refused.report)}`);
      assert.ok(
        refused.report.findings.some((f) => f.check === 'public-key'),
        JSON.stringify(refused.report.findings),
      );
    } finally {
      await after?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

async function gateWorld(backend: Parameters<typeof world>[0], body: (gate: TestGate, url: string, saved: string) => Promise<void>): Promise<void> {
  const gate = await startTestGate(backend);
  const dir = mkdtempSync(join(tmpdir(), 'vigil-leftover-doors-'));
  try {
    await gate.service.app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(gate.service.app.server.address() as AddressInfo).port}`;
    const saved = join(dir, 'saved-checkpoint.json');
    await body(gate, url, saved);
  } finally {
    await gate.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function saveCheckpoint(gate: TestGate, saved: string): Promise<void> {
  const response = await gate.call({ method: 'POST', url: '/api/audit/checkpoint' });
  assert.equal(response.statusCode, 201, response.body);
  writeFileSync(saved, JSON.stringify(response.json<Checkpoint>()));
}

await describeEachDatabase('tamper doors (issue 36, leftovers): the gate', (backend) => {
  test('a change-log row inserted without its leaf: vigil verify names it (exit 1)', async () => {
    await gateWorld(backend, async (gate, url, saved) => {
      await saveCheckpoint(gate, saved);
      await gate.service.context.database.db.insertInto('admin_changes').values(forgedChange(gate.clock.now(), 'policy')).execute();
      await assertUnloggedChange(url, saved, TEST_ADMIN_KEY);
    });
  });

  test("an entry's leaf stored as a change leaf: vigil verify names the leaf (exit 1)", async () => {
    await gateWorld(backend, async (gate, url, saved) => {
      const created = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'payments.send', params: { amount: 5 } } });
      assert.equal(created.statusCode, 201, created.body);
      await saveCheckpoint(gate, saved);
      const { db } = gate.service.context.database;
      const entry = await db.selectFrom('audit_entries').select('id').where('request_id', '=', created.json<{ id: string }>().id).executeTakeFirstOrThrow();
      const leaf = await db.selectFrom('audit_log_leaves').select(['idx', 'kind']).where('item_id', '=', entry.id).executeTakeFirstOrThrow();
      assert.equal(leaf.kind, 'entry');
      await db.updateTable('audit_log_leaves').set({ kind: 'change' }).where('idx', '=', leaf.idx).execute();
      const result = await runVerify<Report>(['--url', url, '--checkpoint', saved], TEST_ADMIN_KEY);
      assert.equal(result.status, 1, `exit 1: ${JSON.stringify(result.report)}`);
      assert.ok(
        result.report.findings.some((f) => f.check === 'leaf-kind' && f.leafIndex === Number(leaf.idx)),
        JSON.stringify(result.report.findings),
      );
    });
  });

  test("a request's trail cut at its tail, head and row rewritten to match: the gate's verify compares it with the log", async () => {
    await gateWorld(backend, async (gate, url, saved) => {
      const created = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'payments.send', params: { amount: 5 } } });
      assert.equal(created.statusCode, 201, created.body);
      const id = created.json<{ id: string }>().id;
      for (const [path, payload] of [
        ['decide', { decision: 'approved' }],
        ['confirm', { result: { sent: 5 } }],
      ] as const) {
        const response = await gate.call({ method: 'POST', url: `/api/requests/${id}/${path}`, payload });
        assert.equal(response.statusCode, 200, response.body);
      }
      await saveCheckpoint(gate, saved);
      const verdict = async () =>
        (await gate.call({ method: 'GET', url: `/api/requests/${id}/audit/verify` })).json<{ valid: boolean; reason: string | null }>();
      assert.equal((await verdict()).valid, true);
      // The confirmation erased: its entry deleted, the head moved back to the decision, the row un-confirmed.
      const { db } = gate.service.context.database;
      const decision = await db.selectFrom('audit_entries').selectAll().where('request_id', '=', id).where('seq', '=', 1).executeTakeFirstOrThrow();
      await db.deleteFrom('audit_entries').where('request_id', '=', id).where('seq', '=', 2).execute();
      await db
        .updateTable('requests')
        .set({ audit_head_seq: 1, audit_head_hash: decision.hash, status: 'approved', confirmed_at: null, execution_result: null })
        .where('id', '=', id)
        .execute();
      const cut = await verdict();
      assert.equal(cut.valid, false, 'the cut tail is reported without a saved checkpoint');
      assert.match(cut.reason ?? '', /the audit log holds 3 entries of this request but its chain ends at seq 1/);
      const result = await runVerify<Report>(['--url', url, '--checkpoint', saved], TEST_ADMIN_KEY);
      assert.equal(result.status, 1, `exit 1: ${JSON.stringify(result.report)}`);
    });
  });
});
