/**
 * kill -9 of a real `vigil gate` process (SQLite, the embedded default) while the webhook attempt
 * of a decision is in flight (the receiver holds it unanswered), then a restart on the same file:
 * the decision survived and the delivery scanner delivers the request.decided webhook
 * (crash-scenarios.ts; `npm run chaos` loops it, also killing right after the decide answer).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gateWebhookCrash } from './crash-scenarios.ts';

test('the gate killed while its webhook attempt is in flight delivers the webhook after the restart', async () => {
  const result = await gateWebhookCrash({ variant: 'in-flight' });
  assert.deepEqual(result.problems, [], JSON.stringify(result.stats));
  assert.equal(result.stats.deliveredBeforeKill, false);
});
