import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Checkpoint } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { erasureMarker } from '@vigil/observe/erasure-leaf';
import { ago, ingestEvents, startTestObserve, type TestObserve } from '@vigil/observe/testing';
import { runVerify, verifyText } from './verify-testkit.ts';

const SUBJECT = 'carol.subject@example.com';
const SECRET = 'Carol private matter 5521';

const noteOf = (sessionId: string, minutes: number, subject: string | null, note: string) => ({
  sessionId,
  agentId: 'agent-e',
  eventType: 'custom',
  timestamp: ago(minutes),
  ...(subject === null ? {} : { metadata: { subjectId: subject } }),
  payload: { type: 'note', data: { note } },
});

// Content stored in the clear and sealed (crypto-shredding): verification reads the same chains either way.
for (const sealed of [false, true]) {
  await describeEachDatabase(`vigil verify and erased events${sealed ? ', content stored encrypted (ENCRYPTION_KEY_FILE)' : ''}`, (backend) => {
    let observe: TestObserve;
    let url = '';
    let saved = '';
    let savedCheckpoint: Checkpoint;
    let publicKey = '';
    const dir = mkdtempSync(join(tmpdir(), 'vigil-verify-erasure-'));
    const file = (name: string, content: unknown): string => {
      const path = join(dir, name);
      writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
      return path;
    };
    const exportBundle = async (sessionId: string, since: number) => {
      const response = await observe.call({ method: 'GET', url: `/api/audit/export?sessionId=${sessionId}&since=${since}` });
      assert.equal(response.statusCode, 200, response.body);
      return response.json<Record<string, unknown>>();
    };

    before(async () => {
      const keyFile = file('master.key', randomBytes(32).toString('base64'));
      observe = await startTestObserve(backend, { env: sealed ? { ENCRYPTION_KEY_FILE: keyFile } : {} });
      await observe.service.app.listen({ host: '127.0.0.1', port: 0 });
      url = `http://127.0.0.1:${(observe.service.app.server.address() as AddressInfo).port}`;
      await ingestEvents(observe, [
        noteOf('e-1', 30, null, 'opening'),
        noteOf('e-1', 29, SUBJECT, SECRET),
        noteOf('e-1', 28, null, 'closing'),
        noteOf('e-2', 27, SUBJECT, `${SECRET} again`),
        {
          sessionId: 'e-2',
          agentId: 'agent-e',
          eventType: 'llm_response',
          timestamp: ago(26.5),
          metadata: { subjectId: SUBJECT },
          payload: {
            callId: 'l1',
            provider: 'openai',
            model: 'gpt-4o-mini',
            completion: SECRET,
            finishReason: 'stop',
            usage: { inputTokens: 40, outputTokens: 9 },
            costUsd: 0.002,
            latencyMs: 300,
          },
        },
        noteOf('e-3', 26, 'someone-else', 'untouched'),
        noteOf('e-3', 25, null, 'untouched too'),
      ]);
      // A checkpoint saved before the erasure: offline and online verification hold the log to it.
      const response = await observe.call({ method: 'POST', url: '/api/audit/checkpoint' });
      assert.equal(response.statusCode, 201, response.body);
      savedCheckpoint = response.json<Checkpoint>();
      saved = file('saved.json', savedCheckpoint);
      publicKey = (await observe.call({ method: 'GET', url: '/api/audit/public-key' })).json<{ publicKey: string }>().publicKey;
      const erased = await observe.call({ method: 'DELETE', url: `/api/subjects/${SUBJECT}`, payload: { reason: 'Art. 17' } });
      assert.equal(erased.statusCode, 200, erased.body);
      file('receipt.json', erased.body);
    });
    after(async () => {
      await observe.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test('online: the whole log verifies with the erasure named, also with --deep', async () => {
      const online = await runVerify(['--url', url, '--checkpoint', saved, '--public-key', publicKey], observe.key);
      assert.equal(online.status, 0, JSON.stringify(online.report) + online.stderr);
      assert.ok(
        online.report.notes.some((note) => /3 events were erased .* under signed erasure leaves/.test(note)),
        online.report.notes.join('\n'),
      );
      const deep = await runVerify(['--url', url, '--checkpoint', saved, '--public-key', publicKey, '--deep'], observe.key);
      assert.equal(deep.status, 0, JSON.stringify(deep.report.findings.slice(0, 5)) + deep.stderr);
    });

    test('offline: the bundles of the erased sessions verify against the checkpoint saved before the erasure', async () => {
      for (const sessionId of ['e-1', 'e-2']) {
        const bundle = await exportBundle(sessionId, savedCheckpoint.treeSize);
        assert.equal((bundle.erasures as unknown[]).length, 1);
        assert.equal(JSON.stringify(bundle).includes(SECRET), false);
        const result = await verifyText([file(`${sessionId}.json`, bundle), '--checkpoint', saved]);
        assert.equal(result.status, 0, result.stdout + result.stderr);
        assert.match(result.stderr + result.stdout, /erased under signed erasure leaves/);
      }
    });

    test('the deletion receipt verifies offline with the audit key (exit 0); altered, it is invalid (exit 1)', async () => {
      const receipt = join(dir, 'receipt.json');
      const valid = await verifyText(['erasure-receipt', receipt, '--public-key', publicKey]);
      assert.equal(valid.status, 0, valid.stdout + valid.stderr);
      assert.match(valid.stdout, /^VALID: erasure \S+ of subject [0-9a-f]{64}: 3 events, reason "Art. 17"/);
      const answer = JSON.parse((await import('node:fs')).readFileSync(receipt, 'utf8')) as { leaf: { body: string } };
      answer.leaf.body = answer.leaf.body.replace('Art. 17', 'Art. 18');
      const altered = await verifyText(['erasure-receipt', file('altered.json', answer), '--public-key', publicKey]);
      assert.equal(altered.status, 1, altered.stdout + altered.stderr);
      assert.match(altered.stdout, /^INVALID: its leaf is not signed by the trusted key/);
      const usage = await verifyText(['erasure-receipt', receipt]);
      assert.equal(usage.status, 2);
    });

    test('an erasure forged in the database (a marker with no signed leaf listing the event) is tampering, online and offline', async () => {
      const { db } = observe.service.context.database;
      const target = await db.selectFrom('events').select('id').where('session_id', '=', 'e-3').orderBy('seq').executeTakeFirstOrThrow();
      const realErasure = (await db.selectFrom('audit_erasures').select('erasure_id').executeTakeFirstOrThrow()).erasure_id;
      const marker = erasureMarker(realErasure);
      await db.updateTable('events').set({ payload: marker.payload, metadata: marker.metadata }).where('id', '=', target.id).execute();
      const online = await runVerify(['--url', url, '--checkpoint', saved, '--public-key', publicKey], observe.key);
      assert.equal(online.status, 1, JSON.stringify(online.report));
      assert.ok(
        online.report.findings.some((f) => f.check === 'erasure' && f.eventId === target.id && /no signed erasure leaf covers/.test(f.message)),
        JSON.stringify(online.report.findings),
      );
      const offline = await verifyText([file('e-3.json', await exportBundle('e-3', savedCheckpoint.treeSize)), '--checkpoint', saved]);
      assert.equal(offline.status, 1, offline.stdout + offline.stderr);
      assert.match(offline.stdout, /erasure marker .* no signed erasure leaf covers/);
    });
  });
}
