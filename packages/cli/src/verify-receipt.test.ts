// `vigil verify receipt FILE [--public-key KEY]` as a real process: exit 0 for a receipt the gate
// signed, 1 for one altered or signed by a key not trusted, 2 for input no verdict can be reached on;
// and across a certified key rotation, with the gate's key list saved as the key file.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { sqliteBackend } from '@vigil/platform/testing';
import { startTestGate, type TestGate } from '@vigil/gate/testing';

const bin = resolve(import.meta.dirname, '../bin/vigil.mjs');
const dir = mkdtempSync(join(tmpdir(), 'vigil-verify-receipt-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const pem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;

function vigil(args: readonly string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const { VIGIL_GATE_PUBLIC_KEY: _, ...inherited } = process.env;
    const child = spawn(process.execPath, [bin, ...args], { env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (status) => done({ status, stdout, stderr }));
  });
}

function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

async function approvedReceipt(gate: TestGate): Promise<Record<string, unknown>> {
  const created = (await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'pay', params: { amount: 10 } } })).json<{ id: string }>();
  const decided = await gate.call({ method: 'POST', url: `/api/requests/${created.id}/decide`, payload: { decision: 'approved' } });
  return decided.json<{ receipt: Record<string, unknown> }>().receipt;
}

test('vigil verify receipt: 0 valid, 1 altered or untrusted key, 2 unusable input', async () => {
  const gate = await startTestGate(sqliteBackend);
  try {
    const receipt = await approvedReceipt(gate);
    const keys = (await gate.call({ method: 'GET', url: '/api/audit/public-key' })).json<{ publicKey: string; publicKeyPem: string }>();
    const receiptFile = file('receipt.json', JSON.stringify(receipt));

    const valid = await vigil(['verify', 'receipt', receiptFile, '--public-key', keys.publicKey]);
    assert.equal(valid.status, 0, valid.stdout + valid.stderr);
    assert.match(valid.stdout, new RegExp(`^VALID: receipt for request ${String(receipt.requestId)}, action "pay"`));
    const fromPemFile = await vigil(['verify', 'receipt', receiptFile, '--public-key', file('gate.pem', keys.publicKeyPem)]);
    assert.equal(fromPemFile.status, 0, fromPemFile.stdout + fromPemFile.stderr);
    const fromEnv = await vigil(['verify', 'receipt', receiptFile, '--json'], { VIGIL_GATE_PUBLIC_KEY: keys.publicKey });
    assert.equal(fromEnv.status, 0, fromEnv.stdout + fromEnv.stderr);
    assert.equal(JSON.parse(fromEnv.stdout).valid, true);

    const tampered = file('tampered.json', JSON.stringify({ ...receipt, action: 'pay_all' }));
    const altered = await vigil(['verify', 'receipt', tampered, '--public-key', keys.publicKey]);
    assert.equal(altered.status, 1, altered.stdout + altered.stderr);
    assert.match(altered.stdout, /^INVALID: its signature does not verify/);
    const otherKey = generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' }) as string;
    assert.equal((await vigil(['verify', 'receipt', receiptFile, '--public-key', otherKey])).status, 1, 'a key not trusted');
    const malformed = await vigil(['verify', 'receipt', file('not-receipt.json', '{"v":1}'), '--public-key', keys.publicKey]);
    assert.equal(malformed.status, 1);
    assert.match(malformed.stdout, /not an approval receipt/);

    for (const [args, what] of [
      [['verify', 'receipt', receiptFile], 'no key'],
      [['verify', 'receipt', file('garbage.json', 'not json'), '--public-key', keys.publicKey], 'not JSON'],
      [['verify', 'receipt', join(dir, 'missing.json'), '--public-key', keys.publicKey], 'missing file'],
      [['verify', 'receipt', receiptFile, '--public-key', 'not-a-key'], 'bad key'],
      [['verify', 'receipt'], 'no file'],
    ] as const) {
      const result = await vigil(args);
      assert.equal(result.status, 2, `${what}: ${result.stdout}${result.stderr}`);
    }
  } finally {
    await gate.close();
  }
});

test('vigil verify receipt across a certified rotation: the saved key list verifies a receipt of the replaced key', async () => {
  const oldKey = pem();
  const before = await startTestGate(sqliteBackend, { env: { AUDIT_SIGNING_KEY: oldKey } });
  const receipt = await approvedReceipt(before);
  await before.close();
  const after = await startTestGate(sqliteBackend, {
    clock: before.clock,
    env: { AUDIT_SIGNING_KEY: pem(), AUDIT_PREVIOUS_SIGNING_KEY: oldKey },
    database: before.config.database,
  });
  try {
    const answer = (await after.call({ method: 'GET', url: '/api/audit/public-key' })).json<{ publicKey: string }>();
    const receiptFile = file('old-receipt.json', JSON.stringify(receipt));
    const keySet = await vigil(['verify', 'receipt', receiptFile, '--public-key', file('keys.json', JSON.stringify(answer))]);
    assert.equal(keySet.status, 0, keySet.stdout + keySet.stderr);
    // The new key alone does not vouch for a receipt it did not sign.
    assert.equal((await vigil(['verify', 'receipt', receiptFile, '--public-key', answer.publicKey])).status, 1);
  } finally {
    await after.close();
  }
});
