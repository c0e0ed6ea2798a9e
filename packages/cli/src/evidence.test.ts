// `vigil evidence` and `vigil verify evidence` as real processes against real services on both
// databases: a pack of a seeded period verifies offline (0); one byte changed in any part → 1
// naming that part; a manifest signed by a key nobody trusts → not valid.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { startTestGate, TEST_ADMIN_KEY } from '@vigil/gate/testing';
import { clockOf, ended, ingest, started, startTestObserve, toolCall } from '@vigil/observe/testing';
import { evidenceManifestMessage, keyIdOf, parseSigningKey, signBytes } from '@vigil/platform/audit-verify';

const bin = resolve(import.meta.dirname, '../bin/vigil.mjs');
const dir = mkdtempSync(join(tmpdir(), 'vigil-evidence-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function vigil(args: readonly string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (status) => done({ status, stdout, stderr }));
  });
}

/** The pack with one byte of the content of `path` changed (a character of its text swapped). */
function tamperedPack(text: string, path: string): string {
  return text
    .split('\n')
    .map((line) => {
      if (line === '') return line;
      const file = JSON.parse(line) as { path: string; content: string };
      if (file.path !== path) return line;
      const at = file.content.search(/[0-9a-f]/);
      const swapped = file.content[at] === '0' ? '1' : '0';
      return JSON.stringify({ path: file.path, content: file.content.slice(0, at) + swapped + file.content.slice(at + 1) });
    })
    .join('\n');
}

await describeEachDatabase('vigil evidence', (backend) => {
  test('a seeded period: built, verified offline, every part tamper-evident, untrusted signer refused', async () => {
    const observe = await startTestObserve(backend);
    const gate = await startTestGate(backend);
    try {
      const clock = clockOf(observe);
      const t0 = new Date(clock.now()).toISOString();
      // The period: sessions (one ending in error), a gate request decided, checkpoints on both logs, an admin change.
      await ingest(observe, [started('s1', 'agent-a', t0), toolCall('s1', 'agent-a', t0), ended('s1', 'agent-a', t0, 'error')]);
      await ingest(observe, [started('s2', 'agent-b', t0)]);
      assert.equal((await observe.call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);
      const created = await gate.call({
        method: 'POST',
        url: '/api/requests',
        payload: { action: 'pay', params: { amount: 10 }, context: { agentId: 'agent-a' } },
      });
      assert.equal(created.statusCode, 201, created.body);
      const requestId = created.json<{ id: string }>().id;
      assert.equal((await gate.call({ method: 'POST', url: `/api/requests/${requestId}/decide`, payload: { decision: 'approved' } })).statusCode, 200);
      assert.equal((await gate.call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);
      await gate.createKey(['request:read'], null, 'auditor');
      // An escalation: a routed request whose deadline passes climbs to its policy's next tier.
      const policy = await gate.call({
        method: 'POST',
        url: '/api/policies',
        payload: {
          name: 'Escalate transfers',
          rules: [
            {
              match: { action: 'transfer' },
              decision: 'route_to_human',
              onDeadline: { escalate: [{ approvers: [], channels: [], timeoutSeconds: 3600 }] },
            },
          ],
        },
      });
      assert.equal(policy.statusCode, 201, policy.body);
      const routed = await gate.call({
        method: 'POST',
        url: '/api/requests',
        payload: { action: 'transfer', params: {}, context: { agentId: 'agent-b' }, expiresAt: new Date(gate.clock.now() + 60_000).toISOString() },
      });
      assert.equal(routed.statusCode, 201, routed.body);
      const escalatedId = routed.json<{ id: string }>().id;
      // An erasure: a data subject's event erased, under its signed erasure leaf.
      await ingest(observe, [{ ...started('s3', 'agent-b', t0), metadata: { subjectId: 'subject@example.com' } }]);
      const erased = await observe.call({ method: 'DELETE', url: '/api/subjects/subject@example.com', payload: { reason: 'GDPR Art. 17 request' } });
      assert.equal(erased.statusCode, 200, erased.body);
      const erasureId = erased.json<{ erasureId: string }>().erasureId;
      // And on the gate: a decided request naming the subject, erased under the gate's own leaf.
      const named = await gate.call({
        method: 'POST',
        url: '/api/requests',
        payload: { action: 'pay', params: { to: 'ada' }, context: { subjectId: 'subject@example.com' } },
      });
      assert.equal(named.statusCode, 201, named.body);
      const namedId = named.json<{ id: string }>().id;
      assert.equal(
        (await gate.call({ method: 'POST', url: `/api/requests/${namedId}/decide`, payload: { decision: 'denied', reason: 'no' } })).statusCode,
        200,
      );
      const gateErased = await gate.call({ method: 'DELETE', url: '/api/subjects/subject@example.com', payload: { reason: 'GDPR Art. 17 request (gate)' } });
      assert.equal(gateErased.statusCode, 200, gateErased.body);
      const gateErasureId = gateErased.json<{ erasureId: string }>().erasureId;
      clock.advance(5 * 60_000);
      gate.clock.advance(5 * 60_000);
      assert.equal(await gate.service.jobs.expiry.tick(), true);
      await ingest(observe, [toolCall('s2', 'agent-b', new Date(clock.now()).toISOString(), 'c2')]);
      assert.equal((await observe.call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);
      assert.equal((await gate.call({ method: 'POST', url: `/api/requests`, payload: { action: 'refund', params: {} } })).statusCode, 201);
      assert.equal((await gate.call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);

      await observe.service.app.listen({ host: '127.0.0.1', port: 0 });
      await gate.service.app.listen({ host: '127.0.0.1', port: 0 });
      const url = (app: typeof observe.service.app) => `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
      const out = join(dir, `${backend.kind}.vigil-evidence.jsonl`);
      const from = new Date(Date.parse(t0) - 60_000).toISOString();
      const to = new Date(clock.now() + 60_000).toISOString();
      const built = await vigil(
        ['evidence', '--from', from, '--to', to, '--out', out, '--url', url(observe.service.app), '--gate-url', url(gate.service.app)],
        { VIGIL_API_KEY: observe.key, VIGIL_GATE_API_KEY: TEST_ADMIN_KEY },
      );
      assert.equal(built.status, 0, built.stdout + built.stderr);

      const pack = readFileSync(out, 'utf8');
      const files = new Map(
        pack
          .trim()
          .split('\n')
          .map((line) => {
            const f = JSON.parse(line) as { path: string; content: string };
            return [f.path, f.content];
          }),
      );
      const oversight = JSON.parse(files.get('parts/oversight.json')!) as {
        requests: { request: { id: string }; receipt: unknown }[];
        escalations: { requestId: string; details: { tier: number } }[];
      };
      assert.deepEqual(oversight.requests.map((r) => r.request.id).includes(requestId), true);
      assert.notEqual(oversight.requests.find((r) => r.request.id === requestId)!.receipt, null, 'the approved request carries its receipt');
      assert.deepEqual(
        oversight.escalations.map((e) => [e.requestId, e.details.tier]),
        [[escalatedId, 1]],
      );
      const retention = JSON.parse(files.get('parts/retention.json')!) as {
        erasures: { erasureId: string; body: string; signature: string }[];
        gateErasures: { erasureId: string; body: string }[];
      };
      assert.deepEqual(
        retention.gateErasures.map((e) => [e.erasureId, (JSON.parse(e.body) as { requests: { id: string }[] }).requests.map((r) => r.id)]),
        [[gateErasureId, [namedId]]],
      );
      assert.match(files.get('report.html')!, new RegExp(`<td>${gateErasureId}</td><td>[^<]+</td><td>GDPR Art. 17 request \\(gate\\)</td>`));
      assert.deepEqual(
        retention.erasures.map((e) => e.erasureId),
        [erasureId],
      );
      assert.match(files.get('report.html')!, new RegExp(`<td>${escalatedId}</td><td>transfer</td>`));
      assert.match(files.get('report.html')!, new RegExp(`<td>${erasureId}</td><td>[^<]+</td><td>GDPR Art. 17 request</td>`));
      const checkpoints = JSON.parse(files.get('parts/checkpoints-observe.json')!) as { checkpoints: unknown[]; consistency: unknown[] };
      assert.equal(checkpoints.checkpoints.length, 2);
      assert.equal(checkpoints.consistency.length, 1);
      const incidents = JSON.parse(files.get('parts/incidents.json')!) as { errorSessions: { id: string }[] };
      assert.deepEqual(
        incidents.errorSessions.map((s) => s.id),
        ['s1'],
      );
      const inventory = files.get('parts/inventory.json')!;
      assert.match(inventory, /auditor/);
      assert.doesNotMatch(inventory, /gk_[a-z0-9_]{10,}/, 'no key secret in the inventory');
      assert.match(files.get('report.html')!, /<h2>Controls matrix<\/h2>/);

      // One agent's pack: the gate and observe filter by agent, so only agent-a's request and error session are read.
      const agentOut = join(dir, `${backend.kind}.agent-a.jsonl`);
      const agentBuilt = await vigil(
        [
          'evidence',
          '--from',
          from,
          '--to',
          to,
          '--agent',
          'agent-a',
          '--out',
          agentOut,
          '--url',
          url(observe.service.app),
          '--gate-url',
          url(gate.service.app),
        ],
        { VIGIL_API_KEY: observe.key, VIGIL_GATE_API_KEY: TEST_ADMIN_KEY },
      );
      assert.equal(agentBuilt.status, 0, agentBuilt.stdout + agentBuilt.stderr);
      const agentParts = new Map(
        readFileSync(agentOut, 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as { path: string; content: string })
          .map((f) => [f.path, JSON.parse(f.path.endsWith('.json') ? f.content : 'null') as Record<string, { request?: { id: string }; id?: string }[]>]),
      );
      assert.deepEqual(
        agentParts.get('parts/oversight.json')!.requests!.map((r) => r.request!.id),
        [requestId],
      );
      assert.deepEqual(agentParts.get('parts/oversight.json')!.escalations, []);
      assert.deepEqual(
        agentParts.get('parts/incidents.json')!.errorSessions!.map((session) => session.id),
        ['s1'],
      );

      const observeKey = (await observe.call({ method: 'GET', url: '/api/audit/public-key' })).json<{ publicKey: string }>().publicKey;
      const valid = await vigil(['verify', 'evidence', out, '--public-key', observeKey]);
      assert.equal(valid.status, 0, valid.stdout + valid.stderr);
      assert.match(valid.stdout, /VALID evidence pack/);
      const unpinned = await vigil(['verify', 'evidence', out]);
      assert.equal(unpinned.status, 3, unpinned.stdout + unpinned.stderr);

      const manifest = JSON.parse(files.get('manifest.json')!) as { parts: { name: string; path: string }[] };
      for (const part of [{ name: 'manifest', path: 'manifest.json' }, ...manifest.parts, { name: 'signatures', path: 'signatures.json' }]) {
        const file = join(dir, `${backend.kind}-${part.name}.jsonl`);
        writeFileSync(file, tamperedPack(pack, part.path));
        const result = await vigil(['verify', 'evidence', file, '--public-key', observeKey]);
        assert.equal(result.status, 1, `${part.name}: ${result.stdout}${result.stderr}`);
        const named = part.name === 'manifest' ? /FAIL (manifest|signatures)/ : new RegExp(`FAIL ${part.name}:`);
        assert.match(result.stdout, named, part.name);
      }

      // Re-signed by a key nobody pinned: the pack is intact but not valid under the trusted key.
      const stranger = parseSigningKey(generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string);
      const signatures = JSON.parse(files.get('signatures.json')!) as { manifestSha256: string };
      const timestamp = new Date().toISOString();
      const forged = {
        manifestSha256: signatures.manifestSha256,
        signatures: [
          {
            log: 'vigil-observe',
            keyId: stranger.keyId,
            publicKey: stranger.publicKey.toString('base64'),
            timestamp,
            signature: signBytes(
              stranger,
              evidenceManifestMessage('vigil-observe', { manifestSha256: signatures.manifestSha256, timestamp, keyId: stranger.keyId }),
            ),
          },
        ],
      };
      const forgedPack = pack
        .trim()
        .split('\n')
        .map((line) => (line.includes('"path":"signatures.json"') ? JSON.stringify({ path: 'signatures.json', content: JSON.stringify(forged) }) : line))
        .join('\n');
      const forgedFile = join(dir, `${backend.kind}-forged.jsonl`);
      writeFileSync(forgedFile, `${forgedPack}\n`);
      const refused = await vigil(['verify', 'evidence', forgedFile, '--public-key', observeKey]);
      assert.equal(refused.status, 1, refused.stdout + refused.stderr);
      assert.match(refused.stdout, /FAIL signatures: the manifest is signed by no trusted key/);
      assert.notEqual(keyIdOf(stranger.publicKey), keyIdOf(Buffer.from(observeKey, 'base64')));
    } finally {
      await observe.close();
      await gate.close();
    }
  });

  test('a pack whose checkpoints span a key rotation verifies when the previous key certified the new one, and fails when nothing did', async () => {
    const pem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
    const [oldPem, newPem, strayPem] = [pem(), pem(), pem()];
    const before = await startTestObserve(backend, { env: { AUDIT_SIGNING_KEY: oldPem } });
    const oldKey = (await before.call({ method: 'GET', url: '/api/audit/public-key' })).json<{ publicKey: string }>().publicKey;
    await ingest(before, [started('r1', 'agent-a', new Date(clockOf(before).now()).toISOString())]);
    assert.equal((await before.call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);
    await before.close();
    const period = ['--from', '2000-01-01T00:00:00Z', '--to', '2100-01-01T00:00:00Z'];

    /** Restarts the same database with `env`'s keys, logs an event and a checkpoint, and answers the pack `vigil evidence` builds from it. */
    const packAfterRestart = async (name: string, env: Record<string, string>) => {
      const restarted = await startTestObserve(backend, { env, database: before.config.database, createKey: false });
      try {
        const call = (request: { method: 'GET' | 'POST'; url: string; payload?: object }) =>
          restarted.service.app.inject({ ...request, headers: { authorization: `Bearer ${before.key}` } });
        const at = new Date(clockOf(restarted).now()).toISOString();
        assert.equal((await call({ method: 'POST', url: '/api/events', payload: { events: [toolCall('r1', 'agent-a', at, name)] } })).statusCode, 201);
        assert.equal((await call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);
        await restarted.service.app.listen({ host: '127.0.0.1', port: 0 });
        const out = join(dir, `${backend.kind}-${name}.jsonl`);
        const port = (restarted.service.app.server.address() as AddressInfo).port;
        const built = await vigil(['evidence', ...period, '--out', out, '--url', `http://127.0.0.1:${port}`], { VIGIL_API_KEY: before.key });
        assert.equal(built.status, 0, built.stdout + built.stderr);
        return out;
      } finally {
        await restarted.close();
      }
    };

    const certified = await packAfterRestart('rotated', { AUDIT_SIGNING_KEY: newPem, AUDIT_PREVIOUS_SIGNING_KEY: oldPem });
    const checkpoints = JSON.parse(
      readFileSync(certified, 'utf8')
        .split('\n')
        .map((line) => JSON.parse(line || '{}') as { path?: string; content?: string })
        .find((file) => file.path === 'parts/checkpoints-observe.json')!.content!,
    ) as { checkpoints: { checkpoint: { keyId: string } }[] };
    assert.equal(
      new Set(checkpoints.checkpoints.map((listed) => listed.checkpoint.keyId)).size,
      2,
      'the checkpoints are signed by the old key, then the new one',
    );
    const valid = await vigil(['verify', 'evidence', certified, '--public-key', oldKey]);
    assert.equal(valid.status, 0, valid.stdout + valid.stderr);
    assert.match(valid.stdout, /note: key \S+ is trusted: certified by key \S+ in the log/);
    assert.match(valid.stdout, /VALID evidence pack/);

    // A key swapped in with no certificate by the previous one: its checkpoint (and the manifest it signs) is not trusted.
    const uncertified = await packAfterRestart('swapped', { AUDIT_SIGNING_KEY: strayPem });
    const refused = await vigil(['verify', 'evidence', uncertified, '--public-key', oldKey]);
    assert.equal(refused.status, 1, refused.stdout + refused.stderr);
    assert.match(refused.stdout, /FAIL checkpoints-observe: the checkpoint at tree size \d+ is not signed by key /);
  });
});
