import assert from 'node:assert/strict';
import { createDecipheriv, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ConfigError } from '@vigil/platform';
import { describeEachDatabase, type TestBackend } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { everyTableText, ingest, startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';

const ALICE = 'alice.liddell@example.com';
const ALICE_SECRET = 'Wonderland diagnosis 4711 rabbit-hole';
const BOB = 'bob.builder@example.org';
const BOB_TEXT = 'Builder quotation 0815 scaffolding';
const ROUTINE = 'routine step 9931';
const iso = (at: number) => new Date(at).toISOString();

function conversation(sessionId: string, at: number): object[] {
  const note = (offset: number, subject: string | null, text: string) => ({
    sessionId,
    agentId: 'support',
    eventType: 'custom',
    timestamp: iso(at + offset),
    ...(subject === null ? {} : { metadata: { subjectId: subject } }),
    payload: { type: 'note', data: { note: text } },
  });
  return [
    note(0, ALICE, `${ALICE_SECRET} for ${ALICE}`),
    {
      sessionId,
      agentId: 'support',
      eventType: 'llm_call',
      timestamp: iso(at + 1),
      metadata: { subjectId: ALICE },
      payload: { callId: `l-${sessionId}`, provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: `I am ${ALICE}: ${ALICE_SECRET}` }] },
    },
    note(2, BOB, BOB_TEXT),
    note(3, null, ROUTINE),
  ];
}

/** A copy of the database as a backup holds it: the events' stored columns and the wrapped data keys. */
interface DatabaseCopy {
  events: { id: string; payload: string; metadata: string }[];
  dataKeys: { id: string; wrapped: string }[];
  /** Every table's rows as text. */
  tables: Map<string, string>;
}

/**
 * Opens a sealed column by the documented format (docs/guide/erasure.md#crypto-shredding), apart
 * from the service's code: `{"$sealed":"v1.<key id>.<base64 of IV, tag, ciphertext>"}`, the data key
 * unwrapped by the master key. Undefined when the key is not among `keys`.
 */
function openWith(master: Buffer, keys: readonly { id: string; wrapped: string }[], text: string, column: string): string | undefined {
  // Empty metadata is stored as it is (it says nothing).
  if (column === 'metadata' && text === '{}') return text;
  const match = /^\{"\$sealed":"v1\.([^.]+)\.([^"]+)"\}$/.exec(text);
  assert.ok(match, `sealed: ${text.slice(0, 80)}`);
  const row = keys.find((key) => key.id === match[1]);
  if (row === undefined) return undefined;
  const gcm = (key: Buffer, sealed: Buffer, aad: string) => {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12)).setAAD(Buffer.from(aad));
    decipher.setAuthTag(sealed.subarray(12, 28));
    return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]);
  };
  const dataKey = gcm(master, Buffer.from(row.wrapped, 'base64'), `vigil-data-key:${row.id}`);
  return gcm(dataKey, Buffer.from(match[2]!, 'base64'), column).toString('utf8');
}

await describeEachDatabase('crypto-shredding (ENCRYPTION_KEY_FILE)', (backend: TestBackend) => {
  let observe: TestObserve;
  const dir = mkdtempSync(join(tmpdir(), 'vigil-shred-'));
  const keyFile = join(dir, 'master.key');
  const master = randomBytes(32);
  writeFileSync(keyFile, `${master.toString('base64')}\n`);
  const sessions = ['conv-1', 'conv-2'];
  let copy: DatabaseCopy;

  before(async () => {
    observe = await startTestObserve(backend, { env: { ENCRYPTION_KEY_FILE: keyFile } });
    for (const [i, id] of sessions.entries()) await ingest(observe, conversation(id, TEST_NOW - 60_000 + i * 10));
  });
  after(() => observe.close());

  /** The copy: SQLite's file copied after a checkpoint and read back attached; PostgreSQL's tables dumped with SQL. */
  async function takeCopy(): Promise<DatabaseCopy> {
    const { db } = observe.service.context.database;
    const { database } = observe.config;
    const tables = await everyTableText(observe);
    if (database.kind !== 'sqlite') {
      return {
        events: await db.selectFrom('events').select(['id', 'payload', 'metadata']).execute(),
        dataKeys: await db.selectFrom('data_keys').select(['id', 'wrapped']).execute(),
        tables,
      };
    }
    await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db);
    const file = join(dir, `copy-${Date.now()}.db`);
    copyFileSync(database.file, file);
    await sql`attach database ${file} as backup`.execute(db);
    try {
      const events = await sql<DatabaseCopy['events'][number]>`select id, payload, metadata from backup.events`.execute(db);
      const dataKeys = await sql<DatabaseCopy['dataKeys'][number]>`select id, wrapped from backup.data_keys`.execute(db);
      return { events: events.rows, dataKeys: dataKeys.rows, tables };
    } finally {
      await sql`detach database backup`.execute(db);
    }
  }

  const plainValues = [ALICE_SECRET, ALICE, BOB_TEXT, BOB, ROUTINE, 'rabbit-hole'];

  test('content is stored sealed: no table (nor the SQLite file) holds it, while every read answers it and the chains verify', async () => {
    const tables = await everyTableText(observe);
    const found = [...tables].flatMap(([table, text]) => plainValues.filter((value) => text.includes(value)).map((value) => `${value} in ${table}`));
    assert.deepEqual(found, []);
    const { database } = observe.config;
    if (database.kind === 'sqlite') {
      await sql`pragma wal_checkpoint(TRUNCATE)`.execute(observe.service.context.database.db);
      for (const file of [database.file, `${database.file}-wal`].filter(existsSync)) {
        const bytes = readFileSync(file);
        assert.deepEqual(
          plainValues.filter((value) => bytes.includes(Buffer.from(value))),
          [],
          file,
        );
      }
    }
    // A data key per subject and one per session for the events naming none.
    const owners = (await observe.service.context.database.db.selectFrom('data_keys').select('owner').execute()).map((r) => r.owner.split(':')[0]).sort();
    assert.deepEqual(owners, ['session', 'session', 'subjects', 'subjects']);

    const listed = await observe.call({ method: 'GET', url: '/api/events?sessionId=conv-1' });
    assert.equal(listed.statusCode, 200, listed.body);
    assert.ok(listed.body.includes(ALICE_SECRET) && listed.body.includes(BOB_TEXT) && listed.body.includes(ROUTINE));
    const first = (listed.json() as { events: { id: string; metadata: Record<string, unknown> }[] }).events[0]!;
    const one = await observe.call({ method: 'GET', url: `/api/events/${first.id}` });
    assert.deepEqual(one.json().metadata, first.metadata);
    for (const id of sessions) {
      const timeline = await observe.call({ method: 'GET', url: `/api/sessions/${id}/timeline` });
      assert.equal(timeline.json().chainValid, true, timeline.body.slice(0, 500));
      assert.ok(timeline.body.includes(ALICE_SECRET));
      assert.equal((await observe.call({ method: 'GET', url: `/api/audit/verify?sessionId=${id}` })).json().valid, true);
      assert.ok((await observe.call({ method: 'GET', url: `/api/sessions/${id}/replay` })).body.includes(ROUTINE));
    }
    // The derived stores hold no plaintext: the full-text index has no words of sealed events, recall embeds none.
    assert.equal((await observe.call({ method: 'GET', url: '/api/events?search=quotation' })).json().events.length, 0);
    assert.equal((await observe.call({ method: 'GET', url: '/api/recall/status' })).json().queue.depth, 0);
  });

  test('a copy taken before the erasure, with the master key and the data keys left, cannot read the subject; the chains still verify naming the erasure', async () => {
    copy = await takeCopy();
    const erased = await observe.call({ method: 'DELETE', url: `/api/subjects/${ALICE}`, payload: { reason: 'GDPR Art. 17 request 7' } });
    assert.equal(erased.statusCode, 200, erased.body);
    const { erasureId } = erased.json() as { erasureId: string };

    const left = await observe.service.context.database.db.selectFrom('data_keys').select(['id', 'wrapped']).execute();
    assert.equal(left.length, copy.dataKeys.length - 1, "the subject's data key is destroyed");
    const opened = copy.events.map((event) => openWith(master, left, event.payload, 'payload'));
    assert.equal(
      opened.some((text) => text?.includes(ALICE_SECRET) || text?.includes(ALICE)),
      false,
    );
    const metadata = copy.events.map((event) => openWith(master, left, event.metadata, 'metadata'));
    assert.equal(
      metadata.some((text) => text?.includes(ALICE)),
      false,
    );
    assert.equal(opened.filter((text) => text === undefined).length, 4, "Alice's four events are unreadable");
    // The control: the same keys still open everything else of the copy.
    assert.equal(opened.filter((text) => text?.includes(BOB_TEXT)).length, 2);
    assert.equal(opened.filter((text) => text?.includes(ROUTINE)).length, 2);
    for (const [table, text] of copy.tables) for (const value of plainValues) assert.equal(text.includes(value), false, `${value} in the copy's ${table}`);
    // The documented limit: the copy's own data_keys rows (a backup that includes the table) still open them.
    assert.ok(copy.events.some((event) => openWith(master, copy.dataKeys, event.payload, 'payload')?.includes(ALICE_SECRET)));

    for (const id of sessions) {
      const verdict = (await observe.call({ method: 'GET', url: `/api/audit/verify?sessionId=${id}` })).json() as {
        valid: boolean;
        erasures: { erasureId: string; eventIds: string[] }[];
      };
      assert.equal(verdict.valid, true, JSON.stringify(verdict));
      assert.deepEqual(
        verdict.erasures.map((e) => [e.erasureId, e.eventIds.length]),
        [[erasureId, 2]],
      );
      const timeline = await observe.call({ method: 'GET', url: `/api/sessions/${id}/timeline` });
      assert.equal(timeline.json().chainValid, true);
      assert.ok(timeline.body.includes(BOB_TEXT) && !timeline.body.includes(ALICE_SECRET));
    }
    // New events of the erased subject get a new data key.
    await ingest(observe, conversation('conv-3', TEST_NOW).slice(0, 1));
    const timeline = await observe.call({ method: 'GET', url: '/api/sessions/conv-3/timeline' });
    assert.ok(timeline.body.includes(ALICE_SECRET));
  });

  test('a sealed column edited in the database is reported as tampering by verification, not answered as an error', async () => {
    const { db } = observe.service.context.database;
    const target = await db.selectFrom('events').select(['id', 'session_id', 'payload']).where('session_id', '=', 'conv-3').executeTakeFirstOrThrow();
    // One ciphertext character changed: the GCM tag no longer authenticates it.
    const at = target.payload.length - 5;
    const edited = target.payload.slice(0, at) + (target.payload[at] === 'A' ? 'B' : 'A') + target.payload.slice(at + 1);
    await db.updateTable('events').set({ payload: edited }).where('id', '=', target.id).execute();
    const verdict = await observe.call({ method: 'GET', url: `/api/audit/verify?sessionId=${target.session_id}` });
    assert.equal(verdict.statusCode, 200, verdict.body);
    assert.equal(verdict.json().valid, false);
    assert.equal(verdict.json().brokenAt.eventId, target.id);
  });

  test('a missing, malformed or wrong key file, or none where content is sealed, stops the start with a clear error', async () => {
    const database = observe.config.database;
    const start = (env: Record<string, string>) => startTestObserve(backend, { env, database, createKey: false });
    await assert.rejects(start({ ENCRYPTION_KEY_FILE: join(dir, 'absent.key') }), (error: unknown) => {
      return error instanceof ConfigError && /ENCRYPTION_KEY_FILE: cannot read .*absent\.key \(ENOENT\)/.test(error.message);
    });
    writeFileSync(join(dir, 'short.key'), randomBytes(16).toString('base64'));
    await assert.rejects(start({ ENCRYPTION_KEY_FILE: join(dir, 'short.key') }), /must hold a 32-byte key as base64 or hex/);
    writeFileSync(join(dir, 'other.key'), randomBytes(32).toString('hex'));
    await assert.rejects(start({ ENCRYPTION_KEY_FILE: join(dir, 'other.key') }), /other\.key is not the master key the stored data keys were wrapped with/);
    await assert.rejects(start({}), /events are stored encrypted \(table data_keys\): set ENCRYPTION_KEY_FILE/);
    // The right key in hex starts.
    writeFileSync(join(dir, 'hex.key'), master.toString('hex'));
    const again = await start({ ENCRYPTION_KEY_FILE: join(dir, 'hex.key') });
    await again.close();
  });
});
