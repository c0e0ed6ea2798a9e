import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, test } from 'node:test';
import { canonicalJson, migrateToLatest, openDatabase } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { InjectOptions } from 'fastify';
import { sql } from 'kysely';
import { buildGateService } from '../app.ts';
import { gateMigrations } from '../migrations.ts';
import type { GateSchema } from '../schema.ts';
import { startTestGate, type TestGate } from '../testing.ts';
import { auditEntryHash, auditEntryText, chainEntryOf, writtenEntryHash } from '../stored-formats/index.ts';
import { verifyAuditChain } from './chain.ts';
import type { AuditEntry } from './routes.ts';

const T0 = Date.parse('2026-11-22T10:00:00.000Z');

interface Verdict {
  requestId: string;
  valid: boolean;
  entryCount: number;
  headSeq: number;
  headHash: string | null;
  brokenAt: number | null;
  reason: string | null;
}

test('auditEntryHash is sha256 hex of the RFC 8785 form of {v:1, …fields, prevHash} (the recipe docs/audit.md gives)', () => {
  const entry = {
    id: 'e1',
    requestId: 'r1',
    action: 'deploy',
    seq: 1,
    timestamp: '2026-11-22T10:00:00.000Z',
    event: 'approved',
    actor: 'api:ops',
    actorKeyId: 'k1',
    actorKeyName: 'ops',
    details: { reason: 'ok', b: [1, 2.5] },
  };
  const text =
    '{"action":"deploy","actor":"api:ops","actorKeyId":"k1","actorKeyName":"ops","details":{"b":[1,2.5],"reason":"ok"},"event":"approved",' +
    '"id":"e1","prevHash":"' +
    'a'.repeat(64) +
    '","requestId":"r1","seq":1,"timestamp":"2026-11-22T10:00:00.000Z","v":1}';
  assert.equal(auditEntryHash(entry, 'a'.repeat(64)), createHash('sha256').update(text).digest('hex'));
  assert.notEqual(auditEntryHash(entry, null), auditEntryHash(entry, 'a'.repeat(64)));
});

test('auditEntryText, written out field by field, is exactly canonicalJson of the entry object (strings well-formed, as the API admits)', () => {
  const entries = [
    {
      id: 'e1',
      requestId: 'r1',
      action: 'deploy',
      seq: 0,
      timestamp: '2026-11-22T10:00:00.000Z',
      event: 'created',
      actor: 'api:ops',
      actorKeyId: null,
      actorKeyName: null,
      details: null,
    },
    {
      id: '0190d6c4-0000-7000-8000-000000000000',
      requestId: 'r"\\2',
      action: 'déployer \u2028 \u0000 😀 \n\t',
      seq: 9_007_199_254_740_991,
      timestamp: '2026-11-22T10:00:00.123Z',
      event: 'decision_refused',
      actor: 'slack:U1 "Ada"',
      actorKeyId: 'k1',
      actorKeyName: 'ops ✓',
      details: { z: [1, 2.5, -0, 1e21, { b: null, a: 'x' }], a: { '\u00e9': true, e: false }, '': 'empty key', '😀': 1, '\ud7ff': 2 },
    },
  ];
  for (const entry of entries) {
    for (const prevHash of [null, 'f'.repeat(64)]) {
      assert.equal(auditEntryText(entry, prevHash), canonicalJson({ v: 1, ...entry, prevHash }));
    }
  }
});

test('writtenEntryHash (the write path: stored details as their canonical text, spliced in) is auditEntryHash of the entry read back', () => {
  const row = {
    id: 'e1',
    request_id: 'r1',
    action: 'deploy',
    ts: T0 + 123,
    event: 'created',
    actor: 'api:ops',
    actor_key_id: 'k1',
    actor_key_name: 'ops',
    details: null as string | null,
    seq: 0,
  };
  for (const details of [null, { urgency: 'high', policyDecision: 'route_to_human', requestHash: 'c'.repeat(64) }, { z: [1, -0, 1e21], a: { é: '😀\n' } }]) {
    const stored = { ...row, details: details === null ? null : canonicalJson(details) };
    for (const prevHash of [null, 'f'.repeat(64)]) {
      assert.equal(writtenEntryHash(stored, prevHash), auditEntryHash(chainEntryOf(stored), prevHash));
    }
  }
});

test('verifyAuditChain: no entries and no head is a valid empty chain; a head with no entries is broken at seq 0', () => {
  assert.deepEqual(verifyAuditChain([]), { valid: true, brokenAt: null, reason: null, headHash: null, erasures: [] });
  assert.deepEqual(verifyAuditChain([], { seq: -1, hash: null }), { valid: true, brokenAt: null, reason: null, headHash: null, erasures: [] });
  assert.equal(verifyAuditChain([], { seq: 0, hash: 'a'.repeat(64) }).brokenAt, 0);
});

await describeEachDatabase('gate audit chain', (backend) => {
  let gate: TestGate;
  beforeEach(async () => {
    gate = await startTestGate(backend);
  });
  afterEach(() => gate.close());

  const ok = async (options: InjectOptions, status = 200): Promise<unknown> => {
    const response = await gate.call(options);
    assert.equal(response.statusCode, status, response.body);
    return response.json();
  };
  const trail = async (id: string) => (await ok({ method: 'GET', url: `/api/requests/${id}/audit` })) as AuditEntry[];
  const verdict = async (id: string) => (await ok({ method: 'GET', url: `/api/requests/${id}/audit/verify` })) as Verdict;
  /** created → approved → confirmed, one second apart. */
  const lifecycle = async (): Promise<string> => {
    const { id } = (await ok({ method: 'POST', url: '/api/requests', payload: { action: 'deploy', params: { env: 'prod' } } }, 201)) as { id: string };
    gate.clock.advance(1000);
    await ok({ method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: 'approved', reason: 'looks safe' } });
    gate.clock.advance(1000);
    await ok({ method: 'POST', url: `/api/requests/${id}/confirm`, payload: { result: { success: true } } });
    return id;
  };
  const db = () => gate.service.context.database.db;
  const entryId = async (requestId: string, seq: number): Promise<string> =>
    (await db().selectFrom('audit_entries').select('id').where('request_id', '=', requestId).where('seq', '=', seq).executeTakeFirstOrThrow()).id;

  test('a full lifecycle is a valid chain a third party re-verifies from the trail alone', async () => {
    const id = await lifecycle();
    const entries = await trail(id);
    assert.deepEqual(
      entries.map((e) => [e.seq, e.event, e.chainValid]),
      [
        [0, 'created', true],
        [1, 'approved', true],
        [2, 'confirmed', true],
      ],
    );
    let prevHash: string | null = null;
    for (const entry of entries) {
      assert.equal(entry.prevHash, prevHash);
      const recomputed = auditEntryHash({ ...entry, requestId: id, action: 'deploy', details: entry.details ?? null }, prevHash);
      assert.equal(entry.hash, recomputed, `seq ${entry.seq}`);
      prevHash = entry.hash;
    }
    assert.deepEqual(await verdict(id), {
      requestId: id,
      valid: true,
      entryCount: 3,
      headSeq: 2,
      headHash: prevHash,
      brokenAt: null,
      reason: null,
      erasures: [],
    });
  });

  test('expiry and a policy decision at creation extend the chain like any other entry', async () => {
    const { id: expiring } = (await ok(
      { method: 'POST', url: '/api/requests', payload: { action: 'deploy', expiresAt: new Date(T0 + 5000).toISOString() } },
      201,
    )) as { id: string };
    gate.clock.advance(6000);
    assert.deepEqual(
      (await trail(expiring)).map((e) => [e.seq, e.event, e.actor]),
      [
        [0, 'created', 'api:admin (GATE_ADMIN_KEY)'],
        [1, 'expired', 'system:expiry'],
      ],
    );
    assert.equal((await verdict(expiring)).valid, true);

    await ok(
      { method: 'POST', url: '/api/policies', payload: { name: 'auto', priority: 1, rules: [{ match: { action: 'read_logs' }, decision: 'auto_approve' }] } },
      201,
    );
    const { id: auto } = (await ok({ method: 'POST', url: '/api/requests', payload: { action: 'read_logs' } }, 201)) as { id: string };
    const entries = await trail(auto);
    assert.deepEqual(
      entries.map((e) => [e.seq, e.event]),
      [
        [0, 'created'],
        [1, 'approved'],
      ],
    );
    assert.equal(entries[1]!.prevHash, entries[0]!.hash);
    assert.deepEqual(await verdict(auto), {
      requestId: auto,
      valid: true,
      entryCount: 2,
      headSeq: 1,
      headHash: entries[1]!.hash,
      brokenAt: null,
      reason: null,
      erasures: [],
    });
  });

  // Each tampering is done in the database directly, on a fresh three-entry chain; the verdict names the first seq that fails.
  const tamperings: { name: string; brokenAt: number; tamper: (id: string) => Promise<void> }[] = [
    {
      name: 'details edited',
      brokenAt: 1,
      tamper: async (id) => void (await sql`update audit_entries set details = ${'{"reason":"forged"}'} where id = ${await entryId(id, 1)}`.execute(db())),
    },
    {
      name: 'actor edited',
      brokenAt: 1,
      tamper: async (id) => void (await sql`update audit_entries set actor = 'api:someone-else' where id = ${await entryId(id, 1)}`.execute(db())),
    },
    {
      name: 'key id edited',
      brokenAt: 0,
      tamper: async (id) => void (await sql`update audit_entries set actor_key_id = 'other-key' where id = ${await entryId(id, 0)}`.execute(db())),
    },
    {
      name: 'timestamp edited',
      brokenAt: 2,
      tamper: async (id) => void (await sql`update audit_entries set ts = ts + 1 where id = ${await entryId(id, 2)}`.execute(db())),
    },
    {
      name: 'middle entry deleted',
      brokenAt: 1,
      tamper: async (id) => void (await sql`delete from audit_entries where id = ${await entryId(id, 1)}`.execute(db())),
    },
    {
      name: 'last entry deleted',
      brokenAt: 2,
      tamper: async (id) => void (await sql`delete from audit_entries where id = ${await entryId(id, 2)}`.execute(db())),
    },
    {
      name: 'two entries swapped',
      brokenAt: 0,
      tamper: async (id) => {
        const [first, second] = [await entryId(id, 0), await entryId(id, 1)];
        await sql`update audit_entries set seq = 100 where id = ${first}`.execute(db());
        await sql`update audit_entries set seq = 0 where id = ${second}`.execute(db());
        await sql`update audit_entries set seq = 1 where id = ${first}`.execute(db());
      },
    },
    {
      name: 'one hash rewritten',
      brokenAt: 1,
      tamper: async (id) => void (await sql`update audit_entries set hash = ${'f'.repeat(64)} where id = ${await entryId(id, 1)}`.execute(db())),
    },
    {
      name: 'last entry edited with its hash recomputed',
      brokenAt: 2,
      tamper: async (id) => {
        const row = await db()
          .selectFrom('audit_entries')
          .selectAll()
          .where('id', '=', await entryId(id, 2))
          .executeTakeFirstOrThrow();
        const forged = { ...row, ts: Number(row.ts), actor: 'api:forger' };
        const hash = auditEntryHash(
          {
            id: forged.id,
            requestId: id,
            action: forged.action,
            seq: 2,
            timestamp: new Date(forged.ts).toISOString(),
            event: forged.event,
            actor: forged.actor,
            actorKeyId: forged.actor_key_id,
            actorKeyName: forged.actor_key_name,
            details: JSON.parse(forged.details!) as Record<string, unknown>,
          },
          forged.prev_hash,
        );
        await sql`update audit_entries set actor = ${forged.actor}, hash = ${hash} where id = ${row.id}`.execute(db());
      },
    },
  ];
  for (const { name, brokenAt, tamper } of tamperings) {
    test(`tampering is reported at the right seq: ${name}`, async () => {
      const id = await lifecycle();
      const untouched = await lifecycle();
      await tamper(id);
      const result = await verdict(id);
      assert.equal(result.valid, false, name);
      assert.equal(result.brokenAt, brokenAt, `${name}: ${result.reason}`);
      assert.equal(typeof result.reason, 'string');
      for (const entry of await trail(id)) assert.equal(entry.chainValid, entry.seq < brokenAt, `${name}: entry seq ${entry.seq}`);
      assert.equal((await verdict(untouched)).valid, true, 'another request’s chain is untouched');
    });
  }

  test('concurrent decide attempts keep one chain: one decision is linked, the others are refused', async () => {
    const { id } = (await ok({ method: 'POST', url: '/api/requests', payload: { action: 'deploy' } }, 201)) as { id: string };
    // On PostgreSQL half the attempts go through a second instance on the same database.
    const other = backend.kind === 'postgres' ? await buildGateService({ ...gate.config }, { runJobs: false, clock: gate.clock }) : null;
    try {
      const responses = await Promise.all(
        Array.from({ length: 12 }, (_, index) => {
          const options: InjectOptions = { method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: index % 2 === 0 ? 'approved' : 'denied' } };
          const app = other !== null && index % 2 === 1 ? other.app : gate.service.app;
          return app.inject({ ...options, headers: { authorization: `Bearer ${gate.config.adminKey}` } });
        }),
      );
      assert.deepEqual(responses.map((r) => r.statusCode).sort(), [200, ...Array<number>(11).fill(409)]);
    } finally {
      await other?.app.close();
    }
    const entries = await trail(id);
    assert.deepEqual(
      entries.map((e) => e.seq),
      [0, 1],
    );
    assert.equal((await verdict(id)).valid, true);
  });

  test('migration 0005 links the trails written before it, in the order they were shown', async () => {
    const { dataDir: _dataDir, ...config } = backend.freshDatabase();
    const database = await openDatabase<GateSchema>(config);
    try {
      await migrateToLatest(database, Object.fromEntries(Object.entries(gateMigrations).filter(([name]) => name < '0005')));
      for (const request of ['r1', 'r2']) {
        await sql`insert into requests (id, action, params, context, urgency, status, created_at, policy_decision)
                  values (${request}, 'deploy', '{}', '{}', 'normal', 'approved', ${T0}, '{}')`.execute(database.db);
      }
      await sql`insert into audit_entries (id, request_id, action, ts, event, actor, details) values
                ('b', 'r1', 'deploy', ${T0 + 1000}, 'approved', 'api:ops', '{"reason":"ok"}'),
                ('a', 'r1', 'deploy', ${T0}, 'created', 'api:agent', null),
                ('c', 'r2', 'deploy', ${T0}, 'created', 'api:agent', null)`.execute(database.db);
      await migrateToLatest(database, gateMigrations);
      const rows = await database.db.selectFrom('audit_entries').selectAll().orderBy('request_id').orderBy('seq').execute();
      assert.deepEqual(
        rows.map((r) => [r.request_id, r.id, r.seq]),
        [
          ['r1', 'a', 0],
          ['r1', 'b', 1],
          ['r2', 'c', 0],
        ],
      );
      const heads = await database.db.selectFrom('requests').select(['id', 'audit_head_seq', 'audit_head_hash']).orderBy('id').execute();
      for (const head of heads) {
        const verdict = verifyAuditChain(
          rows.filter((r) => r.request_id === head.id).map((r) => ({ ...r, ts: Number(r.ts) })),
          { seq: head.audit_head_seq, hash: head.audit_head_hash },
        );
        assert.equal(verdict.valid, true, `${head.id}: ${verdict.reason}`);
      }
      assert.deepEqual(
        heads.map((h) => [h.id, h.audit_head_seq, h.audit_head_hash]),
        [
          ['r1', 1, rows[1]!.hash],
          ['r2', 0, rows[2]!.hash],
        ],
      );
    } finally {
      await database.close();
    }
  });
});
