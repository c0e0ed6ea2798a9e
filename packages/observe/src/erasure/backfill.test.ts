import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { describeEachDatabase, type TestBackend } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { assertErrorBody, ingest, startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';
import { boundSubjectBackfill } from './migrations.ts';

const ALICE = 'alice.liddell@example.com';
const EVENTS = 1200;

// Content stored in the clear and sealed (crypto-shredding): the backfill reads both.
for (const sealed of [false, true]) {
  await describeEachDatabase(`the subject index's backfill${sealed ? ' (content sealed)' : ''}`, (backend: TestBackend) => {
    let observe: TestObserve;
    before(async () => {
      const keyFile = join(mkdtempSync(join(tmpdir(), 'vigil-backfill-')), 'master.key');
      writeFileSync(keyFile, randomBytes(32).toString('base64'));
      observe = await startTestObserve(backend, { env: sealed ? { ENCRYPTION_KEY_FILE: keyFile } : {} });
      // More than two pages of events; every tenth names Alice, in its metadata.
      const events = Array.from({ length: EVENTS }, (_, i) => ({
        sessionId: `s-${i % 30}`,
        agentId: 'support',
        eventType: 'custom',
        timestamp: new Date(TEST_NOW - 60_000 + i).toISOString(),
        ...(i % 10 === 0 ? { metadata: { subjectId: ALICE } } : {}),
        payload: { type: 'note', data: { n: i } },
      }));
      for (let i = 0; i < EVENTS; i += 400) await ingest(observe, events.slice(i, i + 400));
    });
    after(() => observe.close());

    test('a new database has nothing to backfill: its events are indexed at ingest, and the job reads none', async () => {
      const { db } = observe.service.context.database;
      const state = await db.selectFrom('subject_index_backfill').selectAll().executeTakeFirstOrThrow();
      assert.notEqual(state.done_at, null, 'done at migration 0049, before any event');
      assert.equal(state.after_id, '');
      assert.equal((await db.selectFrom('event_subjects').selectAll().execute()).length, EVENTS / 10);
    });

    test('events missing from the index (stored before migration 0035) are indexed by the leased job up to the newest stored at migration 0049, and can then be erased', async () => {
      const { db } = observe.service.context.database;
      const indexed = await db.selectFrom('event_subjects').selectAll().orderBy('event_id').execute();
      assert.equal(indexed.length, EVENTS / 10);
      // As a database from before the index, at its migration 0049: no rows for these events, the backfill bounded at the newest.
      await db.deleteFrom('event_subjects').execute();
      await db.updateTable('subject_index_backfill').set({ after_id: '', done_at: null, until_id: null }).execute();
      await sql`alter table subject_index_backfill drop column until_id`.execute(db);
      await boundSubjectBackfill(db as never);
      const newest = (await db.selectFrom('events').select('id').orderBy('id', 'desc').executeTakeFirstOrThrow()).id;
      assert.equal((await db.selectFrom('subject_index_backfill').selectAll().executeTakeFirstOrThrow()).until_id, newest);
      assertErrorBody(await observe.call({ method: 'DELETE', url: `/api/subjects/${ALICE}`, payload: { reason: 'Art. 17' } }), 404);
      // Stored after the bound: indexed at ingest, never read by the backfill.
      await ingest(observe, [
        {
          sessionId: 's-late',
          agentId: 'support',
          eventType: 'custom',
          timestamp: new Date(TEST_NOW).toISOString(),
          metadata: { subjectId: ALICE },
          payload: { type: 'note', data: { n: -1 } },
        },
      ]);
      const late = await db.selectFrom('event_subjects').selectAll().execute();
      assert.equal(late.length, 1);

      assert.equal(await observe.service.jobs.subjectIndexBackfill.tick(), true, 'the job took its lease and ran');
      assert.deepEqual(
        await db.selectFrom('event_subjects').selectAll().orderBy('event_id').execute(),
        [...indexed, ...late].sort((a, b) => (a.event_id < b.event_id ? -1 : 1)),
      );
      const state = await db.selectFrom('subject_index_backfill').selectAll().executeTakeFirstOrThrow();
      assert.notEqual(state.done_at, null, 'the backfill is done');
      assert.equal(state.after_id, newest, 'it stopped at its bound');

      const erased = await observe.call({ method: 'DELETE', url: `/api/subjects/${ALICE}`, payload: { reason: 'Art. 17' } });
      assert.equal(erased.statusCode, 200, erased.body);
      assert.equal(erased.json().eventCount, EVENTS / 10 + 1);
      // Done, a later run reads nothing: the index of an erased subject stays empty.
      await observe.service.jobs.subjectIndexBackfill.tick();
      assert.equal((await db.selectFrom('event_subjects').select('event_id').execute()).length, 0);
    });
  });
}
