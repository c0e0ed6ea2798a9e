// A cut span is read by its row only when no event lies in its part outside the range
// (aggregate.ts rangeConditions): that test must stay a one-row probe. SQLite 3.53 turns an
// uncorrelated EXISTS into a semi-join whose outer loop walks every event of the probed range while
// the rest of the condition is false (2.8 ms instead of 8 µs for one part of a 24 h report);
// `limit 1` keeps it a probe. The plan is SQLite's; PostgreSQL runs such a subquery once (an InitPlan).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { HOUR_MS } from '@vigil/platform';
import { sqliteBackend } from '@vigil/platform/testing';
import { ingestEvents, startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';
import { eventsWithin } from './aggregate.ts';

let observe: TestObserve;
before(async () => {
  observe = await startTestObserve(sqliteBackend);
  await ingestEvents(
    observe,
    Array.from({ length: 50 }, (_, i) => ({
      sessionId: 'probe',
      agentId: 'a',
      eventType: 'custom',
      timestamp: new Date(TEST_NOW - HOUR_MS + i * 1000).toISOString(),
      payload: { type: 'tick', data: {} },
    })),
  );
});
after(() => observe.close());

test('the test for events outside a cut span is a one-row probe, never a loop over those events (SQLite plan)', async () => {
  const { db } = observe.service.context.database;
  const probed = eventsWithin([[TEST_NOW - HOUR_MS, TEST_NOW]]);
  // A cut hour's row part: its hour, and no event in the part outside the range.
  const compiled = sql`select hour from event_rollups where ${probed} and hour = ${0}`.compile(db);
  const { rows: plan } = await db.executeQuery<{ detail: string }>({ ...compiled, sql: `explain query plan ${compiled.sql}` });
  const details = plan.map((row) => row.detail);
  assert.ok(
    details.some((detail) => /SUBQUERY/.test(detail)),
    details.join(' | '),
  );
  assert.deepEqual(
    details.filter((detail) => /^(SEARCH|SCAN) outside EXISTS/.test(detail)),
    [],
    `the probe became a join: ${details.join(' | ')}`,
  );
  const { rows } = await db.executeQuery<{ hour: number }>(compiled);
  assert.deepEqual(rows, []);
});
