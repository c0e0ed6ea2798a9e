/**
 * The audit log's integrator across real processes (docs/audit.md, "The integrator"): two
 * `vigil observe` processes share one PostgreSQL schema and ingest continuously; exactly one of
 * them holds the integrator's advisory lock and signs. It is killed with SIGKILL mid-ingest: the
 * other takes the lead within a few polls and signs on, every acknowledged event's leaf is in the
 * log, the leaves are one gapless run, the checkpoints form one history (no two at a size, each
 * root the root of the leaves below it, each consistent with the one before by the server's own
 * proof) and `vigil verify --url` finds the whole log valid.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { leadershipNames, parseSigningKey, rootOf, verifyConsistency } from '@vigil/platform';
import {
  call,
  expectStatus,
  firstObserveKey,
  newSchemaName,
  POSTGRES_URL,
  ServiceProcess,
  servicesSkipReason,
  sleep,
  stopInstances,
  tempDir,
  waitFor,
} from './cluster.ts';
import { batchOf } from './crash-scenarios.ts';

const skip = await servicesSkipReason(false);
const run = randomBytes(4).toString('hex');
const POLL_MS = 200;

describe('the audit integrator on two observe processes', { skip }, () => {
  const schema = newSchemaName('integrator');
  const dataDir = tempDir();
  const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
  const publicKey = parseSigningKey(pem).publicKey.toString('base64');
  let instances: ServiceProcess[] = [];
  let client: pg.Client;

  before(async () => {
    // Both instances sign with one key (as a deployment configures them), and look every POLL_MS.
    const env = { DATABASE_URL: POSTGRES_URL, OBSERVE_DB_SCHEMA: schema, AUDIT_SIGNING_KEY: pem, AUDIT_INTEGRATOR_POLL_MS: String(POLL_MS) };
    // One after the other, so that the first holds the lead from the start (either may; the test asks which).
    instances = [await ServiceProcess.create('observe', env, dataDir), await ServiceProcess.create('observe', env, dataDir)];
    for (const instance of instances) await instance.start();
    client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
  });

  after(async () => {
    await client?.end();
    await stopInstances(instances, dataDir, schema);
  });

  /** The pid of the process whose connection holds the integrator's lock (its application_name names it), if any. */
  async function leaderPid(): Promise<number | undefined> {
    const key = BigInt.asUintN(64, BigInt(leadershipNames(schema, 'vigil-observe-integrator').key));
    const { rows } = await client.query<{ application_name: string }>(
      `select a.application_name from pg_locks l join pg_stat_activity a on a.pid = l.pid
       where l.locktype = 'advisory' and l.granted and l.classid = $1 and l.objid = $2 and l.objsubid = 1`,
      [Number(key >> 32n), Number(key & 0xffffffffn)],
    );
    const match = /pid (\d+)$/.exec(rows[0]?.application_name ?? '');
    return match === null ? undefined : Number(match[1]);
  }

  test('the leader killed mid-ingest: the other takes over, no acknowledged leaf lost, no checkpoint forked, the log verifies', async () => {
    const key = await firstObserveKey(instances[0]!.base);
    const firstLeader = await waitFor('an integrator leader', 10_000, leaderPid);
    const leader = instances.find((instance) => instance.child?.pid === firstLeader);
    assert.ok(leader, `the lock is held by pid ${firstLeader}, not one of the instances (${instances.map((i) => i.child?.pid).join(', ')})`);
    const survivor = instances.find((instance) => instance !== leader)!;

    // Continuous ingest through both instances; an answer lost with the killed process is not acknowledged.
    const acknowledged: string[] = [];
    let refused = 0;
    let ingesting = true;
    const sessions = Array.from({ length: 8 }, (_, k) => `integrator-${run}-${k}`);
    const clients = Array.from({ length: 4 }, async (_, c) => {
      for (let n = 0; ingesting; n += 1) {
        const target = leader.running && (c + n) % 2 === 0 ? leader : survivor;
        const touched = [sessions[(c + n) % sessions.length]!, sessions[(c + n + 3) % sessions.length]!];
        try {
          const answer = await call<{ events: { id: string }[] }>(target.base, 'POST', '/api/events', {
            key,
            body: { events: batchOf(`${run}-c${c}-b${n}`, 20, touched, `agent-${c}`) },
          });
          if (answer.status === 201) acknowledged.push(...answer.body.events.map((event) => event.id));
          else refused += 1;
        } catch {
          refused += 1; // the connection died with the process
        }
      }
    });

    // Signed while the first leader leads.
    await waitFor(
      'a checkpoint signed by the first leader',
      20_000,
      async () => (await call(survivor.base, 'GET', '/api/audit/checkpoint', { key })).status === 200,
    );
    // A follower asked for a checkpoint answers the leader's, covering every leaf there was when it was asked.
    const { rows: asked } = await client.query<{ size: string }>(`select size from "${schema}".audit_log_head where id = 1`);
    const fromFollower = await expectStatus<{ treeSize: number }>(201, survivor.base, 'POST', '/api/audit/checkpoint', { key });
    assert.ok(fromFollower.treeSize >= Number(asked[0]!.size), `the follower answered a checkpoint at ${fromFollower.treeSize} < ${asked[0]!.size}`);
    await sleep(1500);
    const { rows: before } = await client.query<{ size: string }>(`select coalesce(max(tree_size), 0) as size from "${schema}".audit_checkpoints`);
    await leader.kill();
    const killedAt = Date.now();
    const takenOver = await waitFor('the survivor to take the lead', 10_000, async () => (await leaderPid()) === survivor.child!.pid);
    const takeoverMs = Date.now() - killedAt;
    assert.ok(takenOver);
    // It signs on: a checkpoint past every leaf there was at the kill.
    const { rows: atKill } = await client.query<{ size: string }>(`select size from "${schema}".audit_log_head where id = 1`);
    await waitFor('a checkpoint signed by the new leader', 15_000, async () => {
      const answer = await call<{ treeSize: number }>(survivor.base, 'GET', '/api/audit/checkpoint', { key });
      return answer.status === 200 && answer.body.treeSize > Number(atKill[0]!.size);
    });
    await sleep(1000);
    ingesting = false;
    await Promise.all(clients);

    // A checkpoint asked of the survivor covers everything (it leads, so it signs).
    const last = await expectStatus<{ treeSize: number; rootHash: string }>(201, survivor.base, 'POST', '/api/audit/checkpoint', { key });
    const { rows: head } = await client.query<{ size: string }>(`select size from "${schema}".audit_log_head where id = 1`);
    assert.equal(last.treeSize, Number(head[0]!.size));

    // Every acknowledged event has its leaf; the leaves are 0 … size − 1 without a gap.
    const { rows: leaves } = await client.query<{ idx: string; item_id: string; leaf_hash: Buffer | string }>(
      `select idx, item_id, leaf_hash from "${schema}".audit_log_leaves order by idx`,
    );
    assert.deepEqual(
      leaves.map((leaf) => Number(leaf.idx)),
      leaves.map((_, i) => i),
    );
    const logged = new Set(leaves.map((leaf) => leaf.item_id));
    const lost = acknowledged.filter((id) => !logged.has(id));
    assert.deepEqual(lost, [], `${lost.length} of ${acknowledged.length} acknowledged events have no leaf`);
    const hashes = leaves.map((leaf) => (typeof leaf.leaf_hash === 'string' ? Buffer.from(leaf.leaf_hash, 'hex') : leaf.leaf_hash));

    // One history: tree sizes unique (the key), each root the root of the leaves below it, each consistent with the previous.
    const { rows: checkpoints } = await client.query<{ tree_size: string; root_hash: string }>(
      `select tree_size, root_hash from "${schema}".audit_checkpoints order by tree_size`,
    );
    assert.ok(
      checkpoints.some((row) => Number(row.tree_size) <= Number(before[0]!.size)) && checkpoints.some((row) => Number(row.tree_size) > Number(atKill[0]!.size)),
      'checkpoints before the kill and after it',
    );
    for (const [i, row] of checkpoints.entries()) {
      const size = Number(row.tree_size);
      assert.equal(row.root_hash, rootOf(hashes.slice(0, size)).toString('hex'), `the root of the checkpoint at ${size}`);
      if (i === 0) continue;
      const previous = checkpoints[i - 1]!;
      const proof = await expectStatus<{ proof: string[] }>(200, survivor.base, 'GET', `/api/audit/consistency?from=${previous.tree_size}&to=${size}`, { key });
      assert.ok(
        verifyConsistency(
          Number(previous.tree_size),
          size,
          Buffer.from(previous.root_hash, 'hex'),
          Buffer.from(row.root_hash, 'hex'),
          proof.proof.map((hash) => Buffer.from(hash, 'hex')),
        ),
        `the checkpoint at ${size} is consistent with the one at ${previous.tree_size}`,
      );
    }

    // The whole log, audited from outside.
    const verified = spawnSync(
      process.execPath,
      [resolve(import.meta.dirname, '../bin/vigil.mjs'), 'verify', '--url', survivor.base, '--public-key', publicKey, '--json'],
      { encoding: 'utf8', env: { ...process.env, VIGIL_API_KEY: key }, timeout: 120_000 },
    );
    assert.equal(verified.status, 0, `vigil verify: ${verified.stdout}\n${verified.stderr}`);
    // Taken over within a few polls of the kill (the lock frees as the killed process's session ends).
    assert.ok(takeoverMs < 10 * POLL_MS + 2000, `taken over ${takeoverMs} ms after the kill`);
    console.log(
      `acknowledged ${acknowledged.length} events, ${refused} batches refused or lost with the process; ${checkpoints.length} checkpoints; taken over ${takeoverMs} ms after the kill`,
    );
  });
});
