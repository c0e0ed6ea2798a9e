import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import type { Transaction } from 'kysely';
import {
  adminChangeQuerySchema,
  createAdminChangeTable,
  keyChangeActor,
  listAdminChanges,
  recordChange,
  SYSTEM_CHANGE_ACTOR,
  logChangeRowsAsLeaves,
  updateAction,
  type AdminChangeTables,
  type ChangeLogTables,
} from './change-log.ts';
import { addKeyCertificates, addLeafKinds, createAuditLogTables, type AuditLogTables } from './audit-log.ts';
import { migrateToLatest, openDatabase, type Database, type MigrationStep } from './db.ts';
import { storeHashesAsBytes } from './stored-hash.ts';
import { describeEachDatabase } from './testing.ts';

/** A change log as a service's migrations leave it: the table, the audit log, change rows as leaves. */
const CHANGE_LOG_STEPS: Record<string, MigrationStep> = {
  '0001_admin_changes': createAdminChangeTable,
  '0002_audit_log': createAuditLogTables,
  '0003_binary_leaf_hashes': (db, dialect) => storeHashesAsBytes(db, dialect, 'audit_log_leaves', ['leaf_hash']),
  '0004_change_rows_as_leaves': logChangeRowsAsLeaves,
  async '0005_leaf_kinds'(db) {
    await addKeyCertificates(db);
    await addLeafKinds(db, 'item');
  },
};

test('updateAction: enabled / disabled when the flag is all that changed, updated otherwise, null for no change', () => {
  const base = { name: 'a', enabled: true, updatedAt: '2026-11-22T10:00:00.000Z' };
  assert.equal(updateAction(base, { ...base, enabled: false, updatedAt: 'later' }), 'disabled');
  assert.equal(updateAction({ ...base, enabled: false }, base), 'enabled');
  assert.equal(updateAction(base, { ...base, name: 'b', enabled: false }), 'updated');
  assert.equal(updateAction(base, { ...base, updatedAt: 'later' }), null);
  assert.equal(updateAction({ rules: [1, 2] }, { rules: [1, 2] }), null);
  assert.equal(updateAction({ rules: [1, 2] }, { rules: [2, 1] }), 'updated');
});

test('keyChangeActor: api:<key name> with the key, anonymous without', () => {
  assert.deepEqual(keyChangeActor({ id: 'k1', name: 'ops' }), { actor: 'api:ops', keyId: 'k1', keyName: 'ops' });
  assert.deepEqual(keyChangeActor(null), { actor: 'anonymous', keyId: null, keyName: null });
});

test("a service's resources: the list's `resource` filter takes them and no other name", () => {
  const query = adminChangeQuerySchema(['widget', 'gadget']);
  assert.equal(query.parse({ resource: 'gadget' }).resource, 'gadget');
  assert.equal(query.safeParse({ resource: 'policy' }).success, false);
  assert.equal(query.parse({}).resource, undefined);
});

test('recordChange takes only the resources of the schema it writes to (checked by the typecheck)', () => {
  const record = async (trx: Transaction<AdminChangeTables<'widget'> & AuditLogTables>) => {
    const change = { resourceId: null, action: 'created' as const, actor: SYSTEM_CHANGE_ACTOR, before: null, after: {} };
    await recordChange(trx, { ...change, resource: 'widget' }, 0);
    // @ts-expect-error -- 'gadget' is no resource of this schema: a feature must declare it first
    await recordChange(trx, { ...change, resource: 'gadget' }, 0);
  };
  assert.equal(typeof record, 'function');
});

await describeEachDatabase('change log: the backstop keeps credentials out of snapshots', (backend) => {
  let database: Database<ChangeLogTables>;
  beforeEach(async () => {
    database = await openDatabase<ChangeLogTables>(backend.freshDatabase());
    await migrateToLatest(database, CHANGE_LOG_STEPS);
  });
  afterEach(() => database.close());

  test('string values under secret, hash, token or password names are redacted, at any depth; flags stay', async () => {
    const before = { name: 'hook', secret: 's3cret-value', hasSecret: true, nested: [{ keyHash: 'abc123', accessToken: 'tok' }] };
    await database.db.transaction().execute((trx) =>
      recordChange(
        trx,
        {
          resource: 'webhook',
          resourceId: 'w1',
          action: 'updated',
          actor: keyChangeActor({ id: 'k1', name: 'ops' }),
          before,
          after: { password: 'pw', count: 2 },
        },
        1_000,
      ),
    );
    const page = await listAdminChanges(database.db, { limit: 10 });
    assert.equal(page.entries.length, 1);
    const [entry] = page.entries;
    assert.deepEqual(entry!.before, { name: 'hook', secret: '[redacted]', hasSecret: true, nested: [{ keyHash: '[redacted]', accessToken: '[redacted]' }] });
    assert.deepEqual(entry!.after, { password: '[redacted]', count: 2 });
    assert.equal(entry!.timestamp, new Date(1_000).toISOString());
    const stored = JSON.stringify(await database.db.selectFrom('admin_changes').selectAll().execute());
    for (const secret of ['s3cret-value', 'abc123', 'tok', 'pw']) assert.ok(!stored.includes(`"${secret}`), secret);
  });
});
