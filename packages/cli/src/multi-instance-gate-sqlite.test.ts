/**
 * Two `vigil gate` processes (real child processes) on one SQLite file in WAL mode, requests and
 * decisions spread over both at once: a grant of N uses approves exactly N requests, and an M-of-N
 * quorum ends in exactly one final decision from distinct deciders. (PostgreSQL: the same races
 * between two instances in grants.test.ts and approvers.test.ts.)
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { call, expectStatus, removeDir, startTwoInstances, tempDir, type ServiceProcess } from './cluster.ts';

const ADMIN = `gk_sqlite_pair_${randomBytes(12).toString('hex')}`;
const DECIDERS = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];

describe('two gate processes on one SQLite file', () => {
  const dataDir = tempDir();
  let gate: ServiceProcess[] = [];
  const keys = new Map<string, string>();

  before(async () => {
    gate = await startTwoInstances('gate', { GATE_ADMIN_KEY: ADMIN }, dataDir);
    for (const name of DECIDERS) {
      const created = await expectStatus<{ key: string }>(201, gate[0]!.base, 'POST', '/api/api-keys', {
        key: ADMIN,
        body: { name, scopes: ['request:decide', 'request:read'] },
      });
      keys.set(name, created.key);
    }
  });

  after(async () => {
    await Promise.all(gate.map((service) => service.stop()));
    removeDir(dataDir);
  });

  /** The i-th instance, alternating. */
  const on = (i: number): string => gate[i % 2]!.base;

  test('both share the one file, in WAL mode', () => {
    assert.ok(existsSync(join(dataDir, 'gate.db')), 'the database file');
    assert.ok(existsSync(join(dataDir, 'gate.db-wal')), 'its write-ahead log');
  });

  test('a grant of 7 uses approves exactly 7 of 40 concurrent requests made through both instances', async () => {
    const grant = await expectStatus<{ id: string }>(201, on(0), 'POST', '/api/grants', { key: ADMIN, body: { action: 'deploy', agentId: 'a', maxUses: 7 } });
    // The other instance reads live grants every GATE_CACHE_REFRESH_MS (1 s).
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const created = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        expectStatus<{ id: string; status: string }>(201, on(i), 'POST', '/api/requests', {
          key: ADMIN,
          body: { action: 'deploy', params: { n: i }, context: { agentId: 'a' } },
        }),
      ),
    );
    const approved = created.filter((request) => request.status === 'approved');
    assert.equal(approved.length, 7, JSON.stringify(created.map((r) => r.status)));
    assert.equal(created.filter((request) => request.status === 'pending').length, 33);
    const detail = await expectStatus<{ uses: number; usedBy: { use: number; requestId: string }[] }>(200, on(1), 'GET', `/api/grants/${grant.id}`, {
      key: ADMIN,
    });
    assert.equal(detail.uses, 7);
    assert.deepEqual(
      detail.usedBy.map((use) => use.use),
      [1, 2, 3, 4, 5, 6, 7],
    );
    assert.deepEqual(new Set(detail.usedBy.map((use) => use.requestId)), new Set(approved.map((request) => request.id)));
  });

  test('3 of N approvals: six concurrent decisions through both instances end in exactly one final decision from distinct deciders', async () => {
    await expectStatus(201, on(0), 'POST', '/api/policies', {
      key: ADMIN,
      body: { name: 'three of n', rules: [{ match: { action: 'pay' }, decision: 'route_to_human', quorum: { approvals: 3 } }] },
    });
    await new Promise((resolve) => setTimeout(resolve, 1100));
    for (let round = 0; round < 3; round += 1) {
      const request = await expectStatus<{ id: string; status: string }>(201, on(round), 'POST', '/api/requests', {
        key: ADMIN,
        body: { action: 'pay', params: { round } },
      });
      assert.equal(request.status, 'pending');
      const answers = await Promise.all(
        DECIDERS.map((who, i) =>
          call(on(i), 'POST', `/api/requests/${request.id}/decide`, {
            key: keys.get(who)!,
            body: { decision: round === 2 && i === 4 ? 'denied' : 'approved' },
          }),
        ),
      );
      const codes = answers.map((answer) => answer.status);
      assert.equal(codes.filter((code) => code === 200).length, 1, JSON.stringify(codes));
      const trail = await expectStatus<{ event: string; actor: string }[]>(200, on(1), 'GET', `/api/requests/${request.id}/audit`, { key: ADMIN });
      const finals = trail.filter((entry) => entry.event === 'approved' || entry.event === 'denied');
      assert.equal(finals.length, 1, JSON.stringify(trail.map((entry) => entry.event)));
      const votes = trail.filter((entry) => entry.event === 'voted');
      const voters = [...votes, ...finals].map((entry) => entry.actor);
      assert.equal(new Set(voters).size, voters.length, 'distinct deciders');
      if (finals[0]!.event === 'approved') assert.equal(voters.length, 3);
      assert.equal(codes.filter((code) => code === 202).length, votes.length);
      assert.equal(codes.filter((code) => code === 409).length, DECIDERS.length - voters.length, JSON.stringify(codes));
      const settled = await expectStatus<{ status: string }>(200, on(round + 1), 'GET', `/api/requests/${request.id}`, { key: ADMIN });
      assert.equal(settled.status, finals[0]!.event);
    }
  });
});
