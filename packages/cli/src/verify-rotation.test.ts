import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import type { Checkpoint } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { ago, custom, ingestEvents, started, startTestObserve } from '@vigil/observe/testing';

const bin = resolve(import.meta.dirname, '../bin/vigil.mjs');
const pem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;

function verify(args: readonly string[], apiKey: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [bin, 'verify', ...args], { env: { ...process.env, VIGIL_API_KEY: apiKey }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (status) => done({ status, stdout, stderr }));
  });
}

await describeEachDatabase('vigil verify across a signing-key rotation', (backend) => {
  test('a checkpoint saved under the old key still anchors the audit of the log signed by the new one, once the new key is given', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigil-rotation-'));
    const before = await startTestObserve(backend, { env: { AUDIT_SIGNING_KEY: pem() } });
    let after: Awaited<ReturnType<typeof startTestObserve>> | undefined;
    try {
      await ingestEvents(before, [started('rot-a', 'agent', ago(30)), custom('rot-a', 'agent', ago(29))]);
      const savedResponse = await before.call({ method: 'POST', url: '/api/audit/checkpoint' });
      const saved = savedResponse.json<Checkpoint>();
      const savedFile = join(dir, 'saved.json');
      writeFileSync(savedFile, savedResponse.body);
      await before.close();

      // The same database, restarted with a new key (AUDIT_SIGNING_KEY rotated).
      const rotated = await startTestObserve(backend, { env: { AUDIT_SIGNING_KEY: pem() }, database: before.config.database, createKey: false });
      after = rotated;
      const call = (request: Parameters<typeof rotated.call>[0]) =>
        rotated.service.app.inject({ ...request, headers: { authorization: `Bearer ${before.key}` } });
      const keys = (await call({ method: 'GET', url: '/api/audit/public-key' })).json<{ keyId: string; keys: { keyId: string }[] }>();
      assert.notEqual(keys.keyId, saved.keyId, 'a new key signs now');
      assert.deepEqual(keys.keys.map((k) => k.keyId).sort(), [saved.keyId, keys.keyId].sort(), 'both keys are published');
      assert.equal(
        (await call({ method: 'POST', url: '/api/events', payload: { events: [custom('rot-a', 'agent', ago(20)), started('rot-b', 'agent', ago(19))] } }))
          .statusCode,
        201,
      );
      const latest = (await call({ method: 'POST', url: '/api/audit/checkpoint' })).json<Checkpoint>();
      assert.equal(latest.keyId, keys.keyId);

      await rotated.service.app.listen({ host: '127.0.0.1', port: 0 });
      const url = `http://127.0.0.1:${(rotated.service.app.server.address() as AddressInfo).port}`;
      // The saved checkpoint pins only the old key: the new one, merely listed by the server, is not trusted (issue 36).
      const unpinned = await verify(['--url', url, '--checkpoint', savedFile], before.key);
      assert.equal(unpinned.status, 1, unpinned.stdout + unpinned.stderr);
      assert.match(
        unpinned.stdout,
        new RegExp(
          `^untrusted-key: the server's latest checkpoint .* is signed by key ${keys.keyId}, which neither --public-key nor the saved checkpoint pins`,
          'm',
        ),
      );
      // The auditor given the new key trusts both: the old one through the saved checkpoint.
      const newKey = (await call({ method: 'GET', url: '/api/audit/public-key' })).json<{ publicKey: string }>().publicKey;
      const result = await verify(['--url', url, '--checkpoint', savedFile, '--public-key', newKey], before.key);
      assert.equal(result.status, 0, result.stdout + result.stderr);
      assert.match(result.stdout, /VALID/);
      assert.match(result.stdout, /consistent with the saved checkpoint/);
    } finally {
      await after?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
