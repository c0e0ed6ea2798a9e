import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { describeEachDatabase, type TestBackend } from '@vigil/platform/testing';
import { assertErrorBody, ingest, startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';

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

    test('events missing from the index (stored before migration 0035) are indexed by the leased job, and can then be erased', async () => {
      const { db } = observe.service.context.database;
      const indexed = await db.selectFrom('event_subjects').selectAll().orderBy('event_id').execute();
      assert.equal(indexed.length, EVENTS / 10);
      // As a database from before the index: no rows for these events.
      await db.deleteFrom('event_subjects').execute();
      assertErrorBody(await observe.call({ method: 'DELETE', url: `/api/subjects/${ALICE}`, payload: { reason: 'Art. 17' } }), 404);

      assert.equal(await observe.service.jobs.subjectIndexBackfill.tick(), true, 'the job took its lease and ran');
      assert.deepEqual(await db.selectFrom('event_subjects').selectAll().orderBy('event_id').execute(), indexed);
      const state = await db.selectFrom('subject_index_backfill').selectAll().executeTakeFirstOrThrow();
      assert.notEqual(state.done_at, null, 'the backfill is done');
      assert.equal(state.after_id, (await db.selectFrom('events').select('id').orderBy('id', 'desc').executeTakeFirstOrThrow()).id);

      const erased = await observe.call({ method: 'DELETE', url: `/api/subjects/${ALICE}`, payload: { reason: 'Art. 17' } });
      assert.equal(erased.statusCode, 200, erased.body);
      assert.equal(erased.json().eventCount, EVENTS / 10);
      // Done, a later run reads nothing: the index of an erased subject stays empty.
      await observe.service.jobs.subjectIndexBackfill.tick();
      assert.equal((await db.selectFrom('event_subjects').select('event_id').execute()).length, 0);
    });
  });
}
