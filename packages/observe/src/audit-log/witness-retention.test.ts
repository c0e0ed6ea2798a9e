import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ConfigError, leafHash, signTimestampedBody, verifyBytes, verifyCheckpoint, type Checkpoint } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { observeConfigFromEnvironment } from '../config.ts';
import { ago, clockOf, custom, ingestEvents, started, startTestObserve, type TestObserve } from '../testing.ts';
import { OBSERVE_LOG } from './index.ts';

const WITNESS_SECRET = 'witness-secret-0123456789';

await describeEachDatabase('audit log: witnesses and retention tombstones', (backend) => {
  let observe: TestObserve;
  let witnessFile: string;
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];
  let failNext = 1;
  const witness = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      // The first push fails: the durable queue must retry it.
      if (failNext > 0) {
        failNext -= 1;
        response.statusCode = 503;
      } else received.push({ headers: request.headers, body });
      response.end();
    });
  });

  before(async () => {
    await new Promise<void>((resolve) => witness.listen(0, '127.0.0.1', resolve));
    witnessFile = join(mkdtempSync(join(tmpdir(), 'vigil-witness-')), 'checkpoints.jsonl');
    observe = await startTestObserve(backend, {
      env: {
        AUDIT_WITNESS_URLS: `http://127.0.0.1:${(witness.address() as AddressInfo).port}/witness`,
        AUDIT_WITNESS_SECRET: WITNESS_SECRET,
        AUDIT_WITNESS_FILE: witnessFile,
      },
    });
  });
  after(async () => {
    await observe.close();
    witness.close();
  });

  test('each new checkpoint reaches the witness file at once and the webhook signed, retried until delivered', async () => {
    await ingestEvents(observe, [started('w-a', 'agent', ago(5)), custom('w-a', 'agent', ago(4))]);
    const response = await observe.call({ method: 'POST', url: '/api/audit/checkpoint' });
    assert.equal(response.statusCode, 201, response.body);
    const checkpoint = response.json() as Checkpoint;
    const publicKey = Buffer.from((await observe.call({ method: 'GET', url: '/api/audit/public-key' })).json<{ publicKey: string }>().publicKey, 'base64');

    const lines = readFileSync(witnessFile, 'utf8').trim().split('\n');
    assert.equal(lines.length, 1);
    const line = JSON.parse(lines[0]!) as { type: string; log: string; checkpoint: Checkpoint; publicKey: string };
    assert.deepEqual(line, { type: 'audit.checkpoint', log: OBSERVE_LOG, checkpoint, publicKey: publicKey.toString('base64') });
    assert.ok(verifyCheckpoint(OBSERVE_LOG, line.checkpoint, publicKey));

    // The same checkpoint asked for again is not witnessed twice.
    assert.equal((await observe.call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);
    assert.equal(readFileSync(witnessFile, 'utf8').trim().split('\n').length, 1);

    // The first attempt was answered 503; the job's scan retries it once due.
    for (let i = 0; i < 50 && received.length === 0; i += 1) {
      clockOf(observe).advance(10_000);
      await observe.service.jobs.auditCheckpoint.tick();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(received.length, 1, 'delivered once, after the retry');
    const delivery = received[0]!;
    assert.deepEqual(JSON.parse(delivery.body), JSON.parse(lines[0]!));
    assert.equal(delivery.headers['x-vigil-event'], 'audit.checkpoint');
    assert.equal(delivery.headers['x-vigil-signature'], signTimestampedBody(WITNESS_SECRET, Number(delivery.headers['x-vigil-timestamp']), delivery.body));
  });

  test('retention leaves one signed tombstone leaf per deleted session, naming its head, event count and reason', async () => {
    const db = observe.service.context.database.db;
    const old = await ingestEvents(observe, [started('r-old', 'agent', ago(3 * 24 * 60)), custom('r-old', 'agent', ago(3 * 24 * 60 - 1))]);
    await ingestEvents(observe, [started('r-new', 'agent', ago(1))]);
    assert.equal((await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } })).statusCode, 200);
    const sizeBefore = Number((await db.selectFrom('audit_log_head').select('size').executeTakeFirstOrThrow()).size);
    await observe.service.jobs.retention.tick();

    assert.equal((await db.selectFrom('events').select('id').where('session_id', '=', 'r-old').execute()).length, 0);
    const tombstones = await db.selectFrom('audit_tombstones').selectAll().execute();
    assert.equal(tombstones.length, 1);
    const tombstone = tombstones[0]!;
    assert.equal(Number(tombstone.leaf_idx), sizeBefore, 'the next leaf of the log');
    const body = JSON.parse(tombstone.body) as Record<string, unknown>;
    const publicKey = Buffer.from(
      (await observe.call({ method: 'GET', url: '/api/audit/public-key' })).json<{ publicKey: string; keyId: string }>().publicKey,
      'base64',
    );
    assert.deepEqual(body, {
      v: 1,
      kind: 'tombstone',
      log: OBSERVE_LOG,
      sessionId: 'r-old',
      headSeq: 1,
      headHash: old[1]!.hash,
      eventCount: 2,
      reason: 'retention',
      timestamp: new Date(clockOf(observe).now()).toISOString(),
      keyId: body.keyId,
    });
    assert.ok(verifyBytes(Buffer.from(tombstone.body, 'utf8'), tombstone.signature, publicKey), 'signed by the audit key');
    const leaf = await db.selectFrom('audit_log_leaves').selectAll().where('idx', '=', tombstone.leaf_idx).executeTakeFirstOrThrow();
    assert.deepEqual(leaf.leaf_hash, leafHash(Buffer.from(tombstone.body, 'utf8')));
    assert.equal(leaf.scope_id, 'r-old');
    // The deleted events' leaves stay: the log never shrinks.
    assert.equal((await db.selectFrom('audit_log_leaves').select('idx').where('scope_id', '=', 'r-old').execute()).length, 3);
  });
});

test('AUDIT_WITNESS_FILE inside DATA_DIR is refused at start', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vigil-data-'));
  assert.throws(
    () => observeConfigFromEnvironment({ AUDIT_WITNESS_FILE: join(dataDir, 'witness.jsonl') }, { dataDir }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /AUDIT_WITNESS_FILE: must be outside DATA_DIR/);
      return true;
    },
  );
  assert.doesNotThrow(() => observeConfigFromEnvironment({ AUDIT_WITNESS_FILE: join(tmpdir(), 'elsewhere.jsonl') }, { dataDir }));
});
