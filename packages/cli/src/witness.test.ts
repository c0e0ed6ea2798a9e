// Witnessing end to end: observe's log submits its checkpoints to two `vigil witness` processes
// (real child processes, real HTTP, tlog-witness), stores their cosignatures and serves them with
// its C2SP checkpoint note; `vigil verify --witness … --min-witnesses K` counts them. The witness
// refuses rollbacks (409 with its size), inconsistent checkpoints (422), unknown logs and signatures.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import {
  cosign,
  formatCheckpointBody,
  formatNote,
  formatSignatureLine,
  formatVerifierKey,
  NOTE_COSIGNATURE_V1,
  NOTE_ED25519,
  parseCheckpointBody,
  parseNote,
  parseSigningKey,
  signNoteText,
  verifyCosignature,
  type NoteKey,
} from '@vigil/platform/audit-verify';
import { describeEachDatabase } from '@vigil/platform/testing';
import { ago, custom, ingestEvents, started, startTestObserve } from '@vigil/observe/testing';

const bin = resolve(import.meta.dirname, '../bin/vigil.mjs');
const pem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;

interface RunningWitness {
  url: string;
  verifierKey: string;
  dataDir: string;
  child: ChildProcess;
}

async function startWitness(dir: string, name: string, signingKey: string, log: { origin: string; key: string }): Promise<RunningWitness> {
  const dataDir = mkdtempSync(join(dir, 'witness-'));
  const config = join(dataDir, 'witness.json');
  writeFileSync(config, JSON.stringify({ name, logs: [log] }));
  const child = spawn(process.execPath, [bin, 'witness', '--config', config, '--port', '0', '--data-dir', dataDir], {
    env: { ...process.env, WITNESS_SIGNING_KEY: signingKey },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const { value: line } = await createInterface({ input: child.stdout! })[Symbol.asyncIterator]().next();
  const started = JSON.parse(line as string) as { url: string; verifierKey: string };
  return { url: started.url, verifierKey: started.verifierKey, dataDir, child };
}

function stopWitness(witness: RunningWitness): Promise<void> {
  return new Promise((done) => {
    witness.child.once('close', () => done());
    witness.child.kill('SIGTERM');
  });
}

function run(args: readonly string[], apiKey: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, VIGIL_API_KEY: apiKey }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (status) => done({ status, stdout, stderr }));
  });
}

async function addCheckpoint(witness: RunningWitness, body: string): Promise<{ status: number; type: string | null; text: string }> {
  const response = await fetch(`${witness.url}/add-checkpoint`, { method: 'POST', body });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

await describeEachDatabase('witnessing: vigil witness cosigns observe’s checkpoints; vigil verify counts the cosignatures', (backend) => {
  test('two witnesses cosign each new checkpoint; k-of-n verify; rollbacks, forks and forged cosignatures are refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigil-witness-'));
    const logPem = pem();
    const logKey = parseSigningKey(logPem);
    const origin = 'vigil.test/observe';
    const logVerifierKey = formatVerifierKey({ name: origin, type: NOTE_ED25519, publicKey: logKey.publicKey });
    const witnessPems = [pem(), pem()];
    const witnesses = [
      await startWitness(dir, 'witness.test/a', witnessPems[0]!, { origin, key: logVerifierKey }),
      await startWitness(dir, 'witness.test/b', witnessPems[1]!, { origin, key: logVerifierKey }),
    ];
    const witnessKeys: NoteKey[] = witnesses.map((witness, i) => ({
      name: `witness.test/${'ab'[i]}`,
      type: NOTE_COSIGNATURE_V1,
      publicKey: parseSigningKey(witnessPems[i]!).publicKey,
    }));
    assert.deepEqual(
      witnesses.map((witness) => witness.verifierKey),
      witnessKeys.map(formatVerifierKey),
      'each witness prints its cosignature verifier key',
    );
    const observe = await startTestObserve(backend, {
      env: {
        AUDIT_SIGNING_KEY: logPem,
        AUDIT_LOG_ORIGIN: origin,
        AUDIT_COSIGNERS: witnesses.map((witness) => `${witness.verifierKey} ${witness.url}`).join(','),
      },
    });
    try {
      const call = (request: Parameters<typeof observe.call>[0]) => observe.call(request);
      const note = async () => {
        const response = await call({ method: 'GET', url: '/api/audit/tlog/checkpoint' });
        assert.equal(response.statusCode, 200, response.body);
        assert.match(String(response.headers['content-type']), /^text\/plain/);
        return parseNote(response.body);
      };
      const keys = (await call({ method: 'GET', url: '/api/audit/public-key' })).json<{ noteVerifierKey: string; origin: string }>();
      assert.equal(keys.noteVerifierKey, logVerifierKey);
      assert.equal(keys.origin, origin);

      await ingestEvents(observe, [started('w-a', 'agent', ago(30)), custom('w-a', 'agent', ago(29))]);
      assert.equal(await observe.service.jobs.auditCheckpoint.tick(), true);
      const first = await note();
      const firstSize = parseCheckpointBody(first.text).treeSize;
      assert.equal(first.signatures.length, 3, 'the log’s signature and both cosignatures');
      for (const key of witnessKeys)
        assert.ok(
          first.signatures.some((signature) => verifyCosignature(first.text, signature, key) !== undefined),
          key.name,
        );

      // The log grows: the second checkpoint reaches each witness with a consistency proof from the first.
      await ingestEvents(observe, [custom('w-a', 'agent', ago(20)), started('w-b', 'agent', ago(19))]);
      assert.equal(await observe.service.jobs.auditCheckpoint.tick(), true);
      const second = await note();
      const secondSize = parseCheckpointBody(second.text).treeSize;
      assert.ok(secondSize > firstSize);
      assert.equal(second.signatures.length, 3);
      for (const witness of witnesses) {
        const state = JSON.parse(readFileSync(join(witness.dataDir, 'witness-state.json'), 'utf8')) as { logs: Record<string, { size: number }> };
        assert.equal(state.logs[origin]!.size, secondSize, 'the witness recorded the latest cosigned checkpoint');
      }

      await observe.service.app.listen({ host: '127.0.0.1', port: 0 });
      const url = `http://127.0.0.1:${(observe.service.app.server.address() as AddressInfo).port}`;
      const base = ['verify', '--url', url, '--public-key', logKey.publicKey.toString('base64')];
      const both = ['--witness', witnesses[0]!.verifierKey, '--witness', witnesses[1]!.verifierKey];
      const twoOfTwo = await run([...base, ...both, '--min-witnesses', '2'], observe.key);
      assert.equal(twoOfTwo.status, 0, twoOfTwo.stdout + twoOfTwo.stderr);
      assert.match(twoOfTwo.stderr, /cosigned by 2 of 2 given witnesses/);
      const third = formatVerifierKey({ name: 'witness.test/c', type: NOTE_COSIGNATURE_V1, publicKey: parseSigningKey(pem()).publicKey });
      const threeOfThree = await run([...base, ...both, '--witness', third, '--min-witnesses', '3', '--json'], observe.key);
      assert.equal(threeOfThree.status, 1, threeOfThree.stdout + threeOfThree.stderr);
      const report = JSON.parse(threeOfThree.stdout) as { verdict: string; findings: { check: string; message: string }[] };
      assert.equal(report.verdict, 'unwitnessed');
      assert.deepEqual(
        report.findings.map((finding) => finding.check),
        ['witness-policy'],
      );
      assert.match(report.findings[0]!.message, /2 valid cosignatures .* fewer than the 3 required/);
      const usage = await run([...base, '--min-witnesses', '2'], observe.key);
      assert.equal(usage.status, 2, 'a count without the witnesses it counts is a usage error');

      // The witness refuses a rollback (the first checkpoint again): 409 naming its size, as tlog-witness says.
      const firstNote = formatNote({ text: first.text, signatures: [first.signatures[0]!] });
      const rollback = await addCheckpoint(witnesses[0]!, `old ${firstSize}\n\n${firstNote}`);
      assert.deepEqual([rollback.status, rollback.type, rollback.text], [409, 'text/x.tlog.size', `${secondSize}\n`]);
      // From its own size, the old size is beyond the checkpoint: 400.
      assert.equal((await addCheckpoint(witnesses[0]!, `old ${secondSize}\n\n${firstNote}`)).status, 400);
      // A fork: a checkpoint the log's key signed over another tree, beyond the witness's size.
      const forkText = formatCheckpointBody({ origin, treeSize: secondSize + 1, rootHash: Buffer.alloc(32, 9) });
      const fork = formatNote({ text: forkText, signatures: [signNoteText(forkText, origin, logKey)] });
      const proof = (await call({ method: 'GET', url: `/api/audit/consistency?from=${firstSize}&to=${secondSize}` })).json<{ proof: string[] }>().proof;
      const forkProof = proof.map((hash) => `${Buffer.from(hash, 'hex').toString('base64')}\n`).join('');
      assert.equal((await addCheckpoint(witnesses[0]!, `old ${secondSize}\n${forkProof}\n${fork}`)).status, 422);
      // The same size with another root: 409.
      const sameSizeText = formatCheckpointBody({ origin, treeSize: secondSize, rootHash: Buffer.alloc(32, 9) });
      const sameSize = formatNote({ text: sameSizeText, signatures: [signNoteText(sameSizeText, origin, logKey)] });
      assert.equal((await addCheckpoint(witnesses[0]!, `old ${secondSize}\n\n${sameSize}`)).status, 409);
      // Signed by another key: 403; of a log the witness does not follow: 404; not a request: 400.
      const stranger = formatNote({ text: forkText, signatures: [signNoteText(forkText, origin, parseSigningKey(pem()))] });
      assert.equal((await addCheckpoint(witnesses[0]!, `old ${secondSize}\n\n${stranger}`)).status, 403);
      const otherText = formatCheckpointBody({ origin: 'other.example/log', treeSize: 1, rootHash: Buffer.alloc(32) });
      assert.equal(
        (await addCheckpoint(witnesses[0]!, `old 0\n\n${formatNote({ text: otherText, signatures: [signNoteText(otherText, origin, logKey)] })}`)).status,
        404,
      );
      assert.equal((await addCheckpoint(witnesses[0]!, 'hello')).status, 400);
      const state = JSON.parse(readFileSync(join(witnesses[0]!.dataDir, 'witness-state.json'), 'utf8')) as { logs: Record<string, { size: number }> };
      assert.equal(state.logs[origin]!.size, secondSize, 'nothing refused moved the witness');

      // A forged cosignature submitted to the log is refused, nothing stored.
      const good = cosign(second.text, witnessKeys[0]!.name, parseSigningKey(witnessPems[0]!), 1_900_000_000);
      const forged = { ...good, signature: Buffer.from(good.signature) };
      forged.signature[30]! ^= 1;
      const refused = await call({
        method: 'POST',
        url: '/api/audit/tlog/cosignatures',
        payload: { note: formatNote({ text: second.text, signatures: [second.signatures[0]!] }) + formatSignatureLine(forged) },
      });
      assert.equal(refused.statusCode, 422, refused.body);
      assert.match(refused.body, /does not verify/);
      assert.deepEqual((await note()).signatures, second.signatures);

      // The hash tiles: the leaf hashes of the checkpoint's tree; never an entry bundle.
      const tile = await call({ method: 'GET', url: `/api/audit/tlog/tile/0/000.p/${secondSize}` });
      assert.equal(tile.statusCode, 200);
      assert.equal(tile.headers['content-type'], 'application/octet-stream');
      assert.equal(tile.rawPayload.length, secondSize * 32);
      assert.equal((await call({ method: 'GET', url: `/api/audit/tlog/tile/0/000.p/${secondSize + 1}` })).statusCode, 404);
      assert.equal((await call({ method: 'GET', url: '/api/audit/tlog/tile/entries/000.p/1' })).statusCode, 404);
    } finally {
      await observe.close();
      await Promise.all(witnesses.map(stopWitness));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
