import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { hashBytes, hashHex } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { EventRow } from './tables.ts';
import { custom, ingestEvents, insertEventCopy, started, startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';
import { sessionLoggedRowsQuery, storedChainText, storedChainTextMatches } from './store.ts';

const at = (seconds: number) => new Date(TEST_NOW - 3_600_000 + seconds * 1000).toISOString();

/**
 * The stored chain text is what a remembered verdict is confirmed against (sessions/verified.ts):
 * every change to any stored byte a verdict reads must make the database's text differ from the
 * one built when the rows were read.
 */
await describeEachDatabase('stored chain text', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  const db = () => observe.service.context.database.db;
  const dialect = () => observe.service.context.database.dialect;

  /** A four-event session and its stored text as read now. */
  async function seed(sessionId: string): Promise<{ ids: string[]; text: string }> {
    const acks = await ingestEvents(observe, [
      started(sessionId, 'agent-s', at(0)),
      custom(sessionId, 'agent-s', at(1)),
      custom(sessionId, 'agent-s', at(2)),
      custom(sessionId, 'agent-s', at(3)),
    ]);
    const text = storedChainText(await sessionLoggedRowsQuery(db(), sessionId).execute());
    assert.ok(text !== null, 'rows written by ingest give a text');
    assert.equal(await storedChainTextMatches(db(), dialect(), sessionId, text), true, 'the untouched rows give the same text');
    return { ids: acks.map((a) => a.id), text };
  }

  const edits: [string, Partial<EventRow>][] = [
    ['payload', { payload: '{"data":{"n":2},"type":"step"}' }],
    ['metadata', { metadata: '{"k":1}' }],
    ['severity', { severity: 'warn' }],
    ['event_type', { event_type: 'tool_call' }],
    ['agent_id', { agent_id: 'agent-x' }],
    ['prev_hash', { prev_hash: hashBytes('ab'.repeat(32)) }],
    ['hash', { hash: hashBytes('cd'.repeat(32)) }],
    ['seq', { seq: 9 }],
  ];
  for (const [column, change] of edits) {
    test(`an edited ${column} no longer matches`, async () => {
      const { ids, text } = await seed(`text-${column}`);
      await db().updateTable('events').set(change).where('id', '=', ids[2]!).execute();
      assert.equal(await storedChainTextMatches(db(), dialect(), `text-${column}`, text), false);
    });
  }

  test('a timestamp moved by one millisecond no longer matches', async () => {
    const { ids, text } = await seed('text-ts');
    await db()
      .updateTable('events')
      .set((eb) => ({ ts: eb('ts', '+', 1) }))
      .where('id', '=', ids[1]!)
      .execute();
    assert.equal(await storedChainTextMatches(db(), dialect(), 'text-ts', text), false);
  });

  test('a hash written back as its hex text instead of its bytes no longer matches', async () => {
    const { ids, text } = await seed('text-hash-as-text');
    const row = await db().selectFrom('events').select('hash').where('id', '=', ids[1]!).executeTakeFirstOrThrow();
    await db()
      .updateTable('events')
      .set({ hash: hashHex(row.hash) as unknown as Buffer })
      .where('id', '=', ids[1]!)
      .execute();
    assert.equal(await storedChainTextMatches(db(), dialect(), 'text-hash-as-text', text), false);
  });

  test('a first prev_hash set to no bytes is not the null it was', async () => {
    const { ids, text } = await seed('text-null');
    await db()
      .updateTable('events')
      .set({ prev_hash: Buffer.alloc(0) })
      .where('id', '=', ids[0]!)
      .execute();
    assert.equal(await storedChainTextMatches(db(), dialect(), 'text-null', text), false);
  });

  test('a deleted, an added and a moved-in row no longer match; nor does a removed audit-log leaf', async () => {
    const deleted = await seed('text-deleted');
    await db().deleteFrom('events').where('id', '=', deleted.ids[3]!).execute();
    assert.equal(await storedChainTextMatches(db(), dialect(), 'text-deleted', deleted.text), false);

    const added = await seed('text-added');
    await insertEventCopy(observe.service.context.database, added.ids[3]!, { id: 'text-added-copy', seq: 4 });
    assert.equal(await storedChainTextMatches(db(), dialect(), 'text-added', added.text), false);

    const moved = await seed('text-moved');
    const other = await seed('text-other');
    await db().updateTable('events').set({ session_id: 'text-moved' }).where('id', '=', other.ids[1]!).execute();
    assert.equal(await storedChainTextMatches(db(), dialect(), 'text-moved', moved.text), false);

    const unlogged = await seed('text-leaf');
    await db().deleteFrom('audit_log_leaves').where('item_id', '=', unlogged.ids[1]!).execute();
    assert.equal(await storedChainTextMatches(db(), dialect(), 'text-leaf', unlogged.text), false);
  });

  test('bytes moved across a field boundary, the fields still spelling the same text end to end, no longer match', async () => {
    const { ids, text } = await seed('text-shift');
    const row = await db().selectFrom('events').selectAll().where('id', '=', ids[1]!).executeTakeFirstOrThrow();
    await db()
      .updateTable('events')
      .set({ event_type: `${row.event_type}${row.severity.slice(0, 1)}`, severity: row.severity.slice(1) })
      .where('id', '=', ids[1]!)
      .execute();
    assert.equal(await storedChainTextMatches(db(), dialect(), 'text-shift', text), false);
  });

  test('a row merged into the one before it, its fields carried in that row leaf, no longer matches', async () => {
    const { ids, text } = await seed('text-merge');
    const [second, third] = await sessionLoggedRowsQuery(db(), 'text-merge').where('events.id', 'in', [ids[2]!, ids[3]!]).execute();
    // Every field of every row, written end to end, reads exactly as before: only where the fields
    // start and end has changed (and the third row is gone).
    const carried = [third!.id, third!.seq, third!.ts, third!.session_id, third!.agent_id, third!.event_type, third!.severity, third!.payload]
      .concat([third!.metadata, `+${hashHex(third!.prev_hash!)}`, hashHex(third!.hash), `+${hashHex(third!.leaf_hash!)}`])
      .join('');
    await db().deleteFrom('events').where('id', '=', ids[3]!).execute();
    await db()
      .updateTable('audit_log_leaves')
      .set({ leaf_hash: Buffer.concat([second!.leaf_hash!, Buffer.from(carried)]) })
      .where('item_id', '=', ids[2]!)
      .execute();
    assert.equal(await storedChainTextMatches(db(), dialect(), 'text-merge', text), false);
  });

  test('rows holding a separator or an empty field give no text to remember', async () => {
    const separated = await seed('text-separator');
    await db().updateTable('events').set({ agent_id: 'agent\u001fs' }).where('id', '=', separated.ids[1]!).execute();
    assert.equal(storedChainText(await sessionLoggedRowsQuery(db(), 'text-separator').execute()), null);
    const emptied = await seed('text-empty');
    await db().updateTable('events').set({ severity: '' }).where('id', '=', emptied.ids[1]!).execute();
    assert.equal(storedChainText(await sessionLoggedRowsQuery(db(), 'text-empty').execute()), null);
  });

  test('a separator moved into a field, with the same row text end to end, no longer matches', async () => {
    const { ids, text } = await seed('text-moved-separator');
    const row = await db().selectFrom('events').selectAll().where('id', '=', ids[1]!).executeTakeFirstOrThrow();
    // event_type takes the separator and the severity; severity keeps only what follows: the
    // row's text, fields joined by separators, reads one separator longer.
    await db()
      .updateTable('events')
      .set({ event_type: `${row.event_type}\u001f${row.severity}`, severity: 'x' })
      .where('id', '=', ids[1]!)
      .execute();
    assert.equal(await storedChainTextMatches(db(), dialect(), 'text-moved-separator', text), false);
  });
});
