/**
 * kill -9 of a real `vigil observe` process on PostgreSQL in the middle of sustained ingest
 * (several clients posting batches, each with a unique marker), then a restart on the same
 * schema: every event of every acknowledged batch is stored, no batch is half-stored, every chain
 * verifies and keeps growing (crash-scenarios.ts; `npm run chaos` loops it, also on SQLite).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { servicesSkipReason } from './cluster.ts';
import { ingestCrash } from './crash-scenarios.ts';

const skip = await servicesSkipReason(false);

test('observe on PostgreSQL killed under sustained ingest: acknowledged batches stored whole, none half-stored, chains valid', { skip }, async () => {
  const result = await ingestCrash({ backend: 'postgres' });
  assert.deepEqual(result.problems, [], JSON.stringify(result.stats));
  assert.ok(Number(result.stats.acked) > 0, 'batches were acknowledged before the kill');
  assert.ok(Number(result.stats.inFlight) > 0, 'batches were in flight at the kill');
});
