import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readOrCreateSecretFile } from './secret-file.ts';

const MODULE = fileURLToPath(new URL('./secret-file.ts', import.meta.url));

test('the secret file is created once (mode 0600) and read back on every later start', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-secret-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'nested', 'key.pem');
  assert.equal(
    readOrCreateSecretFile(file, () => 'first'),
    'first',
  );
  assert.equal(
    readOrCreateSecretFile(file, () => 'second'),
    'first',
  );
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.deepEqual(readdirSync(join(dir, 'nested')), ['key.pem'], 'no draft is left behind');
});

test('an instance that finds the name taken while it generated keeps the secret written first', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-secret-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'key.pem');
  const secret = readOrCreateSecretFile(file, () => {
    assert.equal(existsSync(file), false, 'nothing is at the name while the secret is generated');
    writeFileSync(file, 'the other instance'); // another instance wins while this one generates
    return 'this instance';
  });
  assert.equal(secret, 'the other instance');
  assert.deepEqual(readdirSync(dir), ['key.pem']);
});

test('processes starting at the same moment on one directory all read the same whole secret', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-secret-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const rounds = 8;
  const startAt = Date.now() + 1500;
  // A large secret widens the window in which a file created empty and then written could be read half-done.
  const script = `
    import { readOrCreateSecretFile } from ${JSON.stringify(MODULE)};
    const seen = [];
    for (let round = 0; round < ${rounds}; round++) {
      while (Date.now() < ${startAt} + round * 150);
      const secret = readOrCreateSecretFile(${JSON.stringify(dir)} + '/key-' + round, () => String(process.pid).padEnd(8, '.').repeat(1 << 19));
      seen.push(secret.length + ':' + secret.slice(0, 8));
    }
    process.stdout.write(seen.join(' '));
  `;
  const outputs = await Promise.all(
    Array.from({ length: 6 }, () => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      return new Promise<string>((resolve, reject) => child.on('exit', (code) => (code === 0 ? resolve(output) : reject(new Error(`exit ${code}`)))));
    }),
  );
  assert.equal(new Set(outputs).size, 1, outputs.join(' | '));
  const expected = Array.from({ length: rounds }, (_, round) => `${8 << 19}:${readFileSync(join(dir, `key-${round}`), 'utf8').slice(0, 8)}`);
  assert.equal(outputs[0], expected.join(' '));
});
