import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { assertGateError, everyTableText, startTestGate, type TestGate } from '../testing.ts';

const EMAIL = 'refund.customer@example.com';
const CARD = '5555 5555 5555 4444';
const ACCOUNT = 'ACC-99-1234';

function rulesFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'vigil-gate-redaction-')), 'rules.json');
  writeFileSync(file, JSON.stringify([{ id: 'account', kind: 'path', path: 'params.account', label: 'account' }]));
  return file;
}

await describeEachDatabase('gate: request params are redacted before they are hashed or stored', (backend) => {
  let gate: TestGate;
  before(async () => {
    gate = await startTestGate(backend, { env: { REDACTION_DETECTORS: 'email,card', REDACTION_RULES_FILE: rulesFile() } });
  });
  after(() => gate.close());

  test('POST /api/requests stores markers, records the rules in context.redactions, and its audit trail verifies', async () => {
    const response = await gate.call({
      method: 'POST',
      url: '/api/requests',
      payload: {
        action: 'payments.refund',
        params: { customer: EMAIL, card: `card ${CARD}`, account: ACCOUNT, amount: 120 },
        context: { note: `for ${EMAIL}` },
      },
    });
    assert.equal(response.statusCode, 201, response.body);
    const created = response.json() as { id: string; params: Record<string, unknown>; context: Record<string, unknown> };
    assert.deepEqual(created.params, { customer: '[redacted:email]', card: 'card [redacted:card]', account: '[redacted:account]', amount: 120 });
    assert.deepEqual(created.context, {
      note: 'for [redacted:email]',
      redactions: [
        { rule: 'account', count: 1 },
        { rule: 'card', count: 1 },
        { rule: 'email', count: 2 },
      ],
    });
    const verdict = await gate.call({ method: 'GET', url: `/api/requests/${created.id}/audit/verify` });
    assert.equal(verdict.statusCode, 200, verdict.body);
    assert.equal((verdict.json() as { valid: boolean }).valid, true, verdict.body);

    const stored = await everyTableText(gate);
    for (const raw of [EMAIL, CARD, CARD.replace(/ /g, ''), ACCOUNT]) assert.equal(stored.includes(raw), false, `${raw} is stored`);
  });

  test('a request may not set context.redactions itself: 400, nothing stored', async () => {
    const before = await everyTableText(gate);
    const response = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'x.y', params: {}, context: { redactions: [] } } });
    assertGateError(response, 400, 'bad_request', 'forged redactions');
    assert.equal(await everyTableText(gate), before);
  });
});
