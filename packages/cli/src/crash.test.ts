/**
 * kill -9 of a real service process at the worst moments, then a restart on the same data
 * (crash-scenarios.ts): observe under sustained ingest (PostgreSQL), the gate (SQLite, the
 * embedded default) between a decision and its webhook delivery, observe (SQLite) before its
 * embedding queue drained. `npm run chaos` loops these and the other variants (ingest on SQLite,
 * the gate killed right after the decide answer, the local embedder killed right after a 201).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { servicesSkipReason } from './cluster.ts';
import { embeddingCrash, gateWebhookCrash, ingestCrash, type ScenarioResult } from './crash-scenarios.ts';

const postgresSkip = await servicesSkipReason(false);

function passed(result: ScenarioResult): void {
  assert.deepEqual(result.problems, [], `${result.scenario}: ${JSON.stringify(result.stats)}`);
}

// The scenarios wait on restarts, claim lapses and job ticks more than on the CPU, so they run at once.
describe('crashes (kill -9, then restart on the same data)', { concurrency: true }, () => {
  test('observe on PostgreSQL killed under sustained ingest: acknowledged batches stored whole, none half-stored, chains valid', { skip: postgresSkip }, async () => {
    const result = await ingestCrash({ backend: 'postgres' });
    passed(result);
    assert.ok(Number(result.stats.acked) > 0, 'batches were acknowledged before the kill');
    assert.ok(Number(result.stats.inFlight) > 0, 'batches were in flight at the kill');
  });

  test('the gate killed while its webhook attempt is in flight delivers the webhook after the restart', async () => {
    const result = await gateWebhookCrash({ variant: 'in-flight' });
    passed(result);
    assert.equal(result.stats.deliveredBeforeKill, false);
  });

  test('observe killed before its embedding worker stored the vectors: the events become searchable after the restart', async () => {
    const result = await embeddingCrash({ variant: 'held-backend' });
    passed(result);
    assert.ok(Number(result.stats.queuedAfterRestart) > 0, 'the queue still held the work at the restart');
  });
});
