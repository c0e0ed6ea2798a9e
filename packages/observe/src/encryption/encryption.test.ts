import assert from 'node:assert/strict';
import { createDecipheriv, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { ConfigError, openDatabase } from '@vigil/platform';
import { describeEachDatabase, TEST_POSTGRES_URL, type TestBackend } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { assertErrorBody, everyTableText, ingest, startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';
import { openDataKeyStore } from './key-store.ts';

const ALICE = 'alice.liddell@example.com';
const ALICE_SECRET = 'Wonderland diagnosis 4711 rabbit-hole';
const BOB = 'bob.builder@example.org';
const BOB_TEXT = 'Builder quotation 0815 scaffolding';
const ROUTINE = 'routine step 9931';
const CAROL = 'carol.crash@example.net';
const DAN = 'dan.down@example.net';
const CAROL_TEXT = 'Carol policy number 5521 crash';
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

/** A copy of the database as a backup holds it: the events' stored columns, and every table's rows as text. */
interface DatabaseCopy {
  events: { id: string; payload: string; metadata: string }[];
  tables: Map<string, string>;
}

interface WrappedKey {
  id: string;
  owner: string;
  wrapped: string;
}

/** The key store's rows, read from its file apart from the service (a second connection). */
async function keyStoreRows(file: string): Promise<WrappedKey[]> {
  const store = await openDatabase<{ data_keys: WrappedKey }>({ kind: 'sqlite', file, synchronous: 'NORMAL' });
  try {
    return await store.db.selectFrom('data_keys').select(['id', 'owner', 'wrapped']).execute();
  } finally {
    await store.close();
  }
}

/** The key store's bytes on disk: its file and its WAL. */
function keyStoreBytes(file: string): Buffer {
  return Buffer.concat([file, `${file}-wal`].filter(existsSync).map((path) => readFileSync(path)));
}

/**
 * Opens a sealed column by the documented format (docs/guide/erasure.md#crypto-shredding), apart
 * from the service's code: `{"$sealed":"v1.<key id>.<base64 of IV, tag, ciphertext>"}`, the data key
 * unwrapped by the master key. Undefined when the key is not among `keys`.
 */
function openWith(master: Buffer, keys: readonly WrappedKey[], text: string, column: string): string | undefined {
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

const SOURCE = new URL('.', import.meta.url);

/**
 * Runs an erasure in a child process against the same database and key store whose store never
 * destroys (a swapped-in DataKeyStore), and kills the process (SIGKILL) once the erasure's database
 * transaction committed and the destruction began. Resolves when the child is dead.
 */
async function eraseAndDie(observe: TestObserve, keyFile: string, subject: string): Promise<void> {
  const code = `
    const { buildObserveService } = await import(${JSON.stringify(new URL('../app.ts', SOURCE).href)});
    const { observeConfigFromEnvironment } = await import(${JSON.stringify(new URL('../config.ts', SOURCE).href)});
    const { openDataKeyStore } = await import(${JSON.stringify(new URL('./key-store.ts', SOURCE).href)});
    const base = observeConfigFromEnvironment({ LOG_LEVEL: 'silent', ENCRYPTION_KEY_FILE: process.env.KEY_FILE }, { dataDir: process.env.DATA_DIR });
    const config = { ...base, database: JSON.parse(process.env.DATABASE) };
    const store = await openDataKeyStore(undefined, process.env.KEY_FILE, config.database);
    const dying = new Proxy(store, {
      get(target, name) {
        if (name === 'destroy') return () => { process.stdout.write('destroying\\n'); return new Promise(() => {}); };
        const value = Reflect.get(target, name);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const service = await buildObserveService(config, { runJobs: false, dataKeyStore: dying });
    await service.app.inject({ method: 'DELETE', url: '/api/subjects/' + encodeURIComponent(process.env.SUBJECT), headers: { authorization: 'Bearer ' + process.env.API_KEY }, payload: { reason: 'crash test' } });
    process.stdout.write('answered\\n');
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    env: {
      ...process.env,
      KEY_FILE: keyFile,
      DATA_DIR: observe.config.dataDir,
      DATABASE: JSON.stringify(observe.config.database),
      SUBJECT: subject,
      API_KEY: observe.key,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('destroying')) resolve();
    });
    child.on('exit', () => reject(new Error(`the child exited before destroying: ${out} ${err.slice(0, 2000)}`)));
  });
  child.kill('SIGKILL');
  assert.equal(await exited, 'SIGKILL');
  assert.ok(!out.includes('answered'), 'no receipt was answered');
}

await describeEachDatabase('crypto-shredding (ENCRYPTION_KEY_FILE)', (backend: TestBackend) => {
  let observe: TestObserve;
  const dir = mkdtempSync(join(tmpdir(), 'vigil-shred-'));
  const keyFile = join(dir, 'master.key');
  // The default key store: beside the master key, apart from the events' database (SQLite's or PostgreSQL's).
  const storeFile = join(dir, 'data-keys.db');
  const master = randomBytes(32);
  writeFileSync(keyFile, `${master.toString('base64')}\n`);
  const sessions = ['conv-1', 'conv-2'];
  const copySchema = `copy_${randomBytes(4).toString('hex')}`;

  before(async () => {
    observe = await startTestObserve(backend, { env: { ENCRYPTION_KEY_FILE: keyFile } });
    for (const [i, id] of sessions.entries()) await ingest(observe, conversation(id, TEST_NOW - 60_000 + i * 10));
  });
  after(async () => {
    if (observe.config.database.kind === 'postgres')
      await sql`drop schema if exists ${sql.id(copySchema)} cascade`.execute(observe.service.context.database.db);
    await observe.close();
  });

  /** The copy: SQLite's file copied after a checkpoint and read back attached; PostgreSQL's events table copied into another schema. */
  async function takeCopy(): Promise<DatabaseCopy> {
    const { db } = observe.service.context.database;
    const { database } = observe.config;
    const tables = await everyTableText(observe);
    if (database.kind !== 'sqlite') {
      await sql`create schema ${sql.id(copySchema)}`.execute(db);
      await sql`create table ${sql.id(copySchema, 'events')} as select id, payload, metadata from events`.execute(db);
      const events = await sql<DatabaseCopy['events'][number]>`select id, payload, metadata from ${sql.id(copySchema, 'events')}`.execute(db);
      return { events: events.rows, tables };
    }
    await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db);
    const file = join(dir, `copy-${Date.now()}.db`);
    copyFileSync(database.file, file);
    await sql`attach database ${file} as backup`.execute(db);
    try {
      const events = await sql<DatabaseCopy['events'][number]>`select id, payload, metadata from backup.events`.execute(db);
      const keyTables = await sql<{ name: string }>`select name from backup.sqlite_master where name like '%data_key%' and type = 'table'`.execute(db);
      assert.deepEqual(
        keyTables.rows.map((r) => r.name),
        ['data_key_destructions'],
        'the copy holds no data keys',
      );
      return { events: events.rows, tables };
    } finally {
      await sql`detach database backup`.execute(db);
    }
  }

  const plainValues = [ALICE_SECRET, ALICE, BOB_TEXT, BOB, ROUTINE, 'rabbit-hole'];

  test('content is stored sealed: no table (nor the SQLite file) holds it, nor the data keys, while every read answers it and the chains verify', async () => {
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
    // A data key per subject and one per session for the events naming none, all in the key store; none in the events' database.
    const keys = await keyStoreRows(storeFile);
    assert.deepEqual(keys.map((key) => key.owner.split(':')[0]).sort(), ['session', 'session', 'subjects', 'subjects']);
    for (const key of keys)
      assert.equal(
        [...tables.values()].some((text) => text.includes(key.wrapped)),
        false,
        'a wrapped key in the events database',
      );
    assert.equal(tables.has('data_keys'), false);
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

  test('a copy of the database taken before the erasure, with the master key and the key store as it is after, cannot read the subject; the destroyed key leaves no bytes in the store file', async () => {
    const copy = await takeCopy();
    const before = await keyStoreRows(storeFile);
    const aliceKey = before.find(
      (key) =>
        key.owner.startsWith('subjects:') &&
        copy.events.some((e) => e.payload.includes(key.id) && openWith(master, [key], e.payload, 'payload')?.includes(ALICE)),
    );
    assert.ok(aliceKey, "Alice's key is in the store");
    assert.ok(keyStoreBytes(storeFile).includes(Buffer.from(aliceKey.wrapped)), 'the store file holds the wrapped key before');
    const erased = await observe.call({ method: 'DELETE', url: `/api/subjects/${ALICE}`, payload: { reason: 'GDPR Art. 17 request 7' } });
    assert.equal(erased.statusCode, 200, erased.body);
    const { erasureId } = erased.json() as { erasureId: string };
    // Destroyed before the receipt was answered: gone from the store, and its bytes from the store's file and WAL (secure_delete, checkpoint).
    const left = await keyStoreRows(storeFile);
    assert.deepEqual(
      left.map((key) => key.id).sort(),
      before
        .filter((key) => key.id !== aliceKey.id)
        .map((key) => key.id)
        .sort(),
    );
    assert.equal(keyStoreBytes(storeFile).includes(Buffer.from(aliceKey.wrapped)), false, 'the destroyed key is still in the store file');
    assert.equal((await observe.service.context.database.db.selectFrom('data_key_destructions').selectAll().execute()).length, 0);

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
    // The control: the same store still opens everything else of the copy.
    assert.equal(opened.filter((text) => text?.includes(BOB_TEXT)).length, 2);
    assert.equal(opened.filter((text) => text?.includes(ROUTINE)).length, 2);
    for (const [table, text] of copy.tables) for (const value of plainValues) assert.equal(text.includes(value), false, `${value} in the copy's ${table}`);
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

  test('a process killed between the erasure commit and the key destruction: the key is retired and recorded, the job destroys it', async () => {
    const known = new Set((await keyStoreRows(storeFile)).map((key) => key.id));
    await ingest(observe, [
      {
        sessionId: 'conv-carol',
        agentId: 'support',
        eventType: 'custom',
        timestamp: iso(TEST_NOW - 1000),
        metadata: { subjectId: CAROL },
        payload: { type: 'note', data: { note: CAROL_TEXT } },
      },
    ]);
    const { db } = observe.service.context.database;
    const carolKey = (await keyStoreRows(storeFile)).find((key) => !known.has(key.id))!;
    await eraseAndDie(observe, keyFile, CAROL);
    // Committed (the marker and the leaf) and recorded as a destruction to do; the key still in the store.
    const pending = await db.selectFrom('data_key_destructions').selectAll().execute();
    assert.deepEqual(
      pending.map((row) => row.key_id),
      [carolKey.id],
    );
    assert.ok((await keyStoreRows(storeFile)).some((key) => key.id === carolKey.id));
    const events = await observe.call({ method: 'GET', url: '/api/events?sessionId=conv-carol' });
    assert.equal(events.body.includes(CAROL_TEXT), false);
    // Retired: a new event of Carol's is sealed under a new key, which the destruction leaves alone.
    await ingest(observe, [
      {
        sessionId: 'conv-carol-2',
        agentId: 'support',
        eventType: 'custom',
        timestamp: iso(TEST_NOW),
        metadata: { subjectId: CAROL },
        payload: { type: 'note', data: { note: 'after' } },
      },
    ]);
    assert.equal(await observe.service.jobs.dataKeyDestruction.tick(), true);
    assert.equal((await db.selectFrom('data_key_destructions').selectAll().execute()).length, 0);
    const left = await keyStoreRows(storeFile);
    assert.equal(
      left.some((key) => key.id === carolKey.id),
      false,
      "Carol's key is destroyed",
    );
    assert.equal(keyStoreBytes(storeFile).includes(Buffer.from(carolKey.wrapped)), false);
    assert.ok((await observe.call({ method: 'GET', url: '/api/sessions/conv-carol-2/timeline' })).body.includes('"after"'));
    const receipt = await observe.call({ method: 'GET', url: `/api/erasures/${pending[0]!.erasure_id}` });
    assert.equal(receipt.statusCode, 200, receipt.body);
    assert.equal(receipt.json().eventCount, 1);
  });

  test('a key store that fails to destroy: the erasure answers 503 naming it, no receipt; the receipt waits until the keys are gone', async () => {
    const note = { type: 'note', data: { note: 'Dan account 3141' } };
    await ingest(observe, [
      { sessionId: 'conv-dan', agentId: 'support', eventType: 'custom', timestamp: iso(TEST_NOW - 500), metadata: { subjectId: DAN }, payload: note },
    ]);
    const store = await openDataKeyStore(undefined, keyFile, observe.config.database);
    let failures = 1;
    const flaky = new Proxy(store, {
      get(target, name) {
        if (name === 'destroy' && failures > 0) {
          failures -= 1;
          return () => Promise.reject(new Error('key store down'));
        }
        const value: unknown = Reflect.get(target, name);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    // The same subject hash key as the first instance's (generated into its data directory).
    const hashKey = readFileSync(join(observe.config.dataDir, 'subject-hash.key'), 'utf8').trim();
    const other = await startTestObserve(backend, {
      env: { ENCRYPTION_KEY_FILE: keyFile, SUBJECT_HASH_KEY: hashKey },
      database: observe.config.database,
      createKey: false,
      dataKeyStore: flaky,
    });
    try {
      const call = (request: { method: 'GET' | 'DELETE'; url: string; payload?: object }) =>
        other.service.app.inject({ ...request, headers: { authorization: `Bearer ${observe.key}` } });
      const refused = await call({ method: 'DELETE', url: `/api/subjects/${DAN}`, payload: { reason: 'request 9' } });
      assertErrorBody(refused, 503);
      const erasureId = /Erasure (\S+) is committed/.exec(refused.json().error)?.[1];
      assert.ok(erasureId, refused.body);
      const [pending] = await observe.service.context.database.db.selectFrom('data_key_destructions').selectAll().execute();
      assert.equal(pending?.erasure_id, erasureId);
      assert.ok((await keyStoreRows(storeFile)).some((key) => key.id === pending!.key_id));
      // Asked for, the receipt first destroys the keys (the store answers again).
      const receipt = await call({ method: 'GET', url: `/api/erasures/${erasureId}` });
      assert.equal(receipt.statusCode, 200, receipt.body);
      assert.equal(
        (await keyStoreRows(storeFile)).some((key) => key.id === pending!.key_id),
        false,
      );
      assert.equal((await observe.service.context.database.db.selectFrom('data_key_destructions').selectAll().execute()).length, 0);
    } finally {
      await other.close();
    }
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

  test('data keys left in the database by an earlier version are moved into the key store at start and the table dropped', async () => {
    const { db } = observe.service.context.database;
    // An earlier version's database: one key in data_keys, not (yet) in the store.
    const moved = (await keyStoreRows(storeFile)).find((key) => key.owner === 'session:conv-1')!;
    const store = await openDatabase<{ data_keys: WrappedKey }>({ kind: 'sqlite', file: storeFile, synchronous: 'NORMAL' });
    await store.db.deleteFrom('data_keys').where('id', '=', moved.id).execute();
    await store.close();
    await sql`create table data_keys (id text primary key, owner text not null unique, wrapped text not null, created_at bigint not null)`.execute(db);
    await sql`insert into data_keys values (${moved.id}, ${moved.owner}, ${moved.wrapped}, ${TEST_NOW})`.execute(db);
    const again = await startTestObserve(backend, { env: { ENCRYPTION_KEY_FILE: keyFile }, database: observe.config.database, createKey: false });
    try {
      assert.ok((await keyStoreRows(storeFile)).some((key) => key.id === moved.id && key.wrapped === moved.wrapped));
      assert.equal((await everyTableText(again)).has('data_keys'), false);
      const timeline = await again.service.app.inject({
        method: 'GET',
        url: '/api/sessions/conv-1/timeline',
        headers: { authorization: `Bearer ${observe.key}` },
      });
      assert.ok(timeline.body.includes(ROUTINE), timeline.body.slice(0, 300));
    } finally {
      await again.close();
    }
  });

  // PostgreSQL deployments may keep the key store in a database of its own instead of a file.
  if (backend.kind === 'postgres') {
    test('DATA_KEY_STORE as the URL of another PostgreSQL database: keys live there, erasure destroys them there; the events database itself is refused', async () => {
      const { db } = observe.service.context.database;
      const name = `vigil_keys_${randomBytes(4).toString('hex')}`;
      await sql`create database ${sql.id(name)}`.execute(db);
      const url = new URL(TEST_POSTGRES_URL);
      url.pathname = `/${name}`;
      const own = mkdtempSync(join(tmpdir(), 'vigil-pgstore-'));
      const ownKey = join(own, 'master.key');
      writeFileSync(ownKey, randomBytes(32).toString('base64'));
      const other = await startTestObserve(backend, { env: { ENCRYPTION_KEY_FILE: ownKey, DATA_KEY_STORE: url.href } });
      const keysDb = await openDatabase<{ data_keys: WrappedKey }>({ kind: 'postgres', url: url.href, schema: 'vigil_data_keys' });
      try {
        await ingest(other, conversation('pg-store', TEST_NOW - 5000));
        assert.equal((await keysDb.db.selectFrom('data_keys').select('id').execute()).length, 3, 'two subjects and a session');
        assert.equal(existsSync(join(own, 'data-keys.db')), false);
        const erased = await other.call({ method: 'DELETE', url: `/api/subjects/${ALICE}`, payload: { reason: 'request 8' } });
        assert.equal(erased.statusCode, 200, erased.body);
        assert.equal((await keysDb.db.selectFrom('data_keys').select('id').execute()).length, 2);
        assert.ok((await other.call({ method: 'GET', url: '/api/sessions/pg-store/timeline' })).body.includes(BOB_TEXT));
        await assert.rejects(
          startTestObserve(backend, { env: { ENCRYPTION_KEY_FILE: ownKey, DATA_KEY_STORE: TEST_POSTGRES_URL } }),
          /DATA_KEY_STORE: .* is the events' database: the key store must live apart from it/,
        );
      } finally {
        await keysDb.close();
        await other.close();
        await sql`drop database ${sql.id(name)} with (force)`.execute(db);
      }
    });
  }

  test('a missing, malformed or wrong key file, another key store, or no key where content is sealed, stops the start with a clear error', async () => {
    const database = observe.config.database;
    const start = (env: Record<string, string>) => startTestObserve(backend, { env, database, createKey: false });
    await assert.rejects(start({ ENCRYPTION_KEY_FILE: join(dir, 'absent.key') }), (error: unknown) => {
      return error instanceof ConfigError && /ENCRYPTION_KEY_FILE: cannot read .*absent\.key \(ENOENT\)/.test(error.message);
    });
    writeFileSync(join(dir, 'short.key'), randomBytes(16).toString('base64'));
    await assert.rejects(start({ ENCRYPTION_KEY_FILE: join(dir, 'short.key') }), /must hold a 32-byte key as base64 or hex/);
    writeFileSync(join(dir, 'other.key'), randomBytes(32).toString('hex'));
    await assert.rejects(start({ ENCRYPTION_KEY_FILE: join(dir, 'other.key') }), /other\.key is not the master key the stored data keys were wrapped with/);
    await assert.rejects(start({}), /events are stored encrypted: set ENCRYPTION_KEY_FILE/);
    // A new, empty store (a wrong path): refused, not used to seal anew.
    await assert.rejects(
      start({ ENCRYPTION_KEY_FILE: keyFile, DATA_KEY_STORE: join(dir, 'elsewhere', 'keys.db') }),
      /DATA_KEY_STORE: .*elsewhere.*keys\.db is not the key store this database's events were sealed with/,
    );
    // The right key in hex starts.
    writeFileSync(join(dir, 'hex.key'), master.toString('hex'));
    const again = await start({ ENCRYPTION_KEY_FILE: join(dir, 'hex.key') });
    await again.close();
  });
});
