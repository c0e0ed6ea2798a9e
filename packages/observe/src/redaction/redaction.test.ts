import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { assertErrorBody, everyTableText, ingestEvents, startTestObserve, type TestObserve } from '../testing.ts';
import type { Event } from '../events/index.ts';

const APPROVAL_SECRET = 'approval-gate-env-secret-0123456789';
const NOW_ISO = '2026-11-22T10:00:00.000Z';

/** Values each ingest path sends; none of them may be stored anywhere. */
const CARD = '4111 1111 1111 1111';
const IBAN = 'DE89 3704 0044 0532 0130 00';
const PHONE = '+44 20 7946 0958';
const OPENAI_KEY = 'sk-proj-Abcdefghijklmnopqrstuvwx0123456789';
const AWS_KEY = 'AKIAIOSFODNN7EXAMPLE';
const GITHUB_TOKEN = `ghp_${'a1B2c3D4e5'.repeat(4)}`;
const BEARER = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlMTIz';
const EMPLOYEE = 'EMP-482913';
const SSN = '078-05-1120';
const EMAILS = { events: 'events.api.person@example.com', generic: 'generic.hook@example.org', gate: 'gate.forward@example.net', otel: 'otel.span@example.io' };

/** Text with every detector's kind of value and the regex rule's, mailing `email`. */
const sensitive = (email: string) =>
  `mail ${email}, card ${CARD}, iban ${IBAN}, call ${PHONE}, keys ${OPENAI_KEY} ${AWS_KEY} ${GITHUB_TOKEN}, ` +
  `Authorization: Bearer ${BEARER}, employee ${EMPLOYEE}`;

const RAW_VALUES = [...Object.values(EMAILS), CARD, CARD.replace(/ /g, ''), IBAN, PHONE, OPENAI_KEY, AWS_KEY, GITHUB_TOKEN, BEARER, EMPLOYEE, SSN];

function rulesFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-redaction-'));
  const file = join(dir, 'rules.json');
  writeFileSync(
    file,
    JSON.stringify([
      { id: 'employee-id', kind: 'regex', pattern: 'EMP-\\d{6}', label: 'employee' },
      { id: 'ssn-field', kind: 'path', path: 'payload.data.customer.ssn', label: 'ssn' },
    ]),
  );
  return file;
}

const sign = (secret: string, body: string): string => createHmac('sha256', secret).update(body).digest('hex');

async function assertStoredNowhere(observe: TestObserve, values: readonly string[]): Promise<void> {
  const texts = await everyTableText(observe);
  assert.ok(texts.has('events') && texts.get('events')!.length > 0, 'the events table was scanned');
  for (const [table, text] of texts) {
    for (const value of values) assert.equal(text.includes(value), false, `${JSON.stringify(value)} is stored in table ${table}`);
  }
  const { database } = observe.config;
  if (database.kind === 'sqlite') {
    await sql`pragma wal_checkpoint(TRUNCATE)`.execute(observe.service.context.database.db);
    for (const file of [database.file, `${database.file}-wal`]) {
      if (!existsSync(file)) continue;
      const bytes = readFileSync(file);
      for (const value of values) assert.equal(bytes.includes(Buffer.from(value, 'utf8')), false, `${JSON.stringify(value)} is in the bytes of ${file}`);
    }
  }
}

async function getEvent(observe: TestObserve, id: string): Promise<Event> {
  const response = await observe.call({ method: 'GET', url: `/api/events/${id}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as Event;
}

async function eventsOfSession(observe: TestObserve, sessionId: string): Promise<Event[]> {
  const response = await observe.call({ method: 'GET', url: `/api/events?sessionId=${encodeURIComponent(sessionId)}&order=asc&limit=500` });
  assert.equal(response.statusCode, 200, response.body);
  return (response.json() as { events: Event[] }).events;
}

async function assertVerifies(observe: TestObserve, sessionId: string): Promise<void> {
  const response = await observe.call({ method: 'GET', url: `/api/audit/verify?sessionId=${encodeURIComponent(sessionId)}` });
  assert.equal(response.statusCode, 200, response.body);
  assert.equal((response.json() as { valid: boolean }).valid, true, `session ${sessionId} verifies: ${response.body}`);
}

async function eventTotal(observe: TestObserve): Promise<number> {
  const response = await observe.call({ method: 'GET', url: '/api/events?limit=1' });
  return (response.json() as { total: number }).total;
}

/** The markers and `redactions` a text from `sensitive` leaves. */
function assertRedactedText(text: string, email: string): void {
  assert.equal(
    text,
    'mail [redacted:email], card [redacted:card], iban [redacted:iban], call [redacted:phone], keys [redacted:secret] [redacted:secret] [redacted:secret], ' +
      'Authorization: [redacted:secret], employee [redacted:employee]',
    `the text mailing ${email}`,
  );
}

await describeEachDatabase('redaction: every ingest path redacts before the hash', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, {
      env: { REDACTION_DETECTORS: 'all', REDACTION_RULES_FILE: rulesFile(), APPROVAL_GATE_WEBHOOK_SECRET: APPROVAL_SECRET },
    });
  });
  after(() => observe.close());

  test('POST /api/events (with and without Idempotency-Key): markers in place, the rules that fired in metadata, the chain verifies', async () => {
    const events = [
      {
        sessionId: 'red-api',
        agentId: 'agent-red',
        eventType: 'custom',
        timestamp: NOW_ISO,
        payload: { type: 'note', data: { text: sensitive(EMAILS.events), customer: { ssn: SSN, name: 'kept' } } },
        metadata: { contact: EMAILS.events },
      },
    ];
    const [ack] = await ingestEvents(observe, events);
    const stored = await getEvent(observe, ack!.id);
    const data = stored.payload.data as { text: string; customer: { ssn: string; name: string } };
    assertRedactedText(data.text, EMAILS.events);
    assert.deepEqual(data.customer, { ssn: '[redacted:ssn]', name: 'kept' });
    assert.equal(stored.metadata.contact, '[redacted:email]');
    assert.deepEqual(stored.metadata.redactions, [
      { rule: 'card', count: 1 },
      { rule: 'email', count: 2 },
      { rule: 'employee-id', count: 1 },
      { rule: 'iban', count: 1 },
      { rule: 'phone', count: 1 },
      { rule: 'secret', count: 4 },
      { rule: 'ssn-field', count: 1 },
    ]);
    assert.equal(ack!.hash, stored.hash, 'the hash answered is the stored (redacted) event’s');

    const keyed = await observe.call({
      method: 'POST',
      url: '/api/events',
      headers: { 'idempotency-key': 'redaction-key-1' },
      payload: { events: [{ ...events[0], metadata: { contact: `${EMAILS.events} again` } }] },
    });
    assert.equal(keyed.statusCode, 201, keyed.body);
    assert.equal((await eventsOfSession(observe, 'red-api'))[1]!.metadata.contact, '[redacted:email] again');
    await assertVerifies(observe, 'red-api');
  });

  test('the webhook routes (generic with a key, and the gate forwarding signed approval_gate webhooks, single and batch)', async () => {
    const generic = {
      source: 'generic',
      event: 'note.added',
      data: { eventType: 'custom', type: 'note', data: { text: sensitive(EMAILS.generic) } },
      context: { service_session_id: 'red-hooks', service_agent_id: 'agent-red' },
    };
    const one = await observe.call({ method: 'POST', url: '/api/events/ingest', payload: generic });
    assert.equal(one.statusCode, 201, one.body);

    const forwarded = {
      source: 'approval_gate',
      event: 'request.created',
      data: { requestId: 'r-red', action: 'payments.refund', params: { note: sensitive(EMAILS.gate) }, urgency: 'high' },
      context: { service_session_id: 'red-hooks', service_agent_id: 'agent-red' },
    };
    const body = JSON.stringify(forwarded);
    const signed = await observe.service.app.inject({
      method: 'POST',
      url: '/api/events/ingest',
      payload: body,
      headers: { 'content-type': 'application/json', 'x-webhook-signature': sign(APPROVAL_SECRET, body) },
    });
    assert.equal(signed.statusCode, 201, signed.body);
    const batchBody = JSON.stringify({ source: 'approval_gate', events: [{ ...forwarded, data: { ...forwarded.data, requestId: 'r-red-2' } }] });
    const batch = await observe.service.app.inject({
      method: 'POST',
      url: '/api/events/ingest/batch',
      payload: batchBody,
      headers: { 'content-type': 'application/json', 'x-webhook-signature': sign(APPROVAL_SECRET, batchBody) },
    });
    assert.equal(batch.statusCode, 201, batch.body);

    const stored = await eventsOfSession(observe, 'red-hooks');
    assert.equal(stored.length, 3);
    assertRedactedText((stored[0]!.payload.data as { text: string }).text, EMAILS.generic);
    for (const event of stored.slice(1)) {
      assert.equal(event.writtenBy, 'webhook:approval_gate');
      assertRedactedText((event.payload.params as { note: string }).note, EMAILS.gate);
      assert.ok(Array.isArray(event.metadata.redactions));
    }
    await assertVerifies(observe, 'red-hooks');
  });

  test('OTLP: span attributes mapped into events are redacted', async () => {
    const attribute = (key: string, value: string | number) => ({ key, value: typeof value === 'string' ? { stringValue: value } : { intValue: value } });
    const start = 1_795_600_000_000_000_000n;
    const request = {
      resourceSpans: [
        {
          resource: { attributes: [attribute('service.name', 'red-otel')] },
          scopeSpans: [
            {
              scope: { name: 'test' },
              spans: [
                {
                  traceId: '0'.repeat(31) + '7',
                  spanId: '0'.repeat(15) + '1',
                  name: 'chat gpt-4o-mini',
                  startTimeUnixNano: String(start),
                  endTimeUnixNano: String(start + 250_000_000n),
                  attributes: [
                    attribute('gen_ai.operation.name', 'chat'),
                    attribute('gen_ai.provider.name', 'openai'),
                    attribute('gen_ai.request.model', 'gpt-4o-mini'),
                    attribute('gen_ai.usage.input_tokens', 10),
                    attribute('gen_ai.usage.output_tokens', 5),
                    attribute('gen_ai.conversation.id', 'red-otel'),
                    attribute('gen_ai.prompt.0.role', 'user'),
                    attribute('gen_ai.prompt.0.content', sensitive(EMAILS.otel)),
                  ],
                },
              ],
            },
          ],
        },
      ],
    };
    const response = await observe.call({
      method: 'POST',
      url: '/v1/traces',
      payload: JSON.stringify(request),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(response.statusCode, 200, response.body);
    const stored = await eventsOfSession(observe, 'red-otel');
    const call = stored.find((event) => event.eventType === 'llm_call');
    assert.ok(call, `an llm_call among ${stored.map((e) => e.eventType).join(', ')}`);
    assert.ok(JSON.stringify(call.payload).includes('[redacted:email]'), JSON.stringify(call.payload));
    assert.ok(Array.isArray(call.metadata.redactions));
    await assertVerifies(observe, 'red-otel');
  });

  test('a near miss is kept: a 16-digit number failing Luhn, an IBAN with wrong check digits, a short number', async () => {
    const kept = 'order 4111 1111 1111 1112, ref DE00 3704 0044 0532 0130 00, room 1234, v1.2.3, 2026-11-22';
    const [ack] = await ingestEvents(observe, [
      { sessionId: 'red-kept', agentId: 'agent-red', eventType: 'custom', timestamp: NOW_ISO, payload: { type: 'note', data: kept } },
    ]);
    const stored = await getEvent(observe, ack!.id);
    assert.equal(stored.payload.data, kept);
    assert.equal(stored.metadata.redactions, undefined, 'nothing fired, nothing recorded');
  });

  test('an event may not set metadata.redactions itself: 400, nothing stored', async () => {
    const before = await eventTotal(observe);
    const response = await observe.call({
      method: 'POST',
      url: '/api/events',
      payload: {
        events: [{ sessionId: 'red-forged', agentId: 'agent-red', eventType: 'custom', payload: { type: 'x', data: 1 }, metadata: { redactions: [] } }],
      },
    });
    assert.equal(assertErrorBody(response, 400, 'forged redactions').code, 'redaction_field_reserved');
    assert.equal(await eventTotal(observe), before);
  });

  test('a rule that fails on an event refuses its whole batch with 422, nothing stored; the admin rule changes are in the change log', async () => {
    const created = await observe.call({
      method: 'POST',
      url: '/api/redaction/rules',
      payload: { name: 'input tokens', kind: 'path', path: 'payload.usage.inputTokens' },
    });
    assert.equal(created.statusCode, 201, created.body);
    const rule = created.json() as { id: string; label: string; enabled: boolean };
    assert.equal(rule.label, 'field');
    assert.equal(rule.enabled, true);

    const before = await eventTotal(observe);
    const response = await observe.call({
      method: 'POST',
      url: '/api/events',
      payload: {
        events: [
          { sessionId: 'red-fail', agentId: 'agent-red', eventType: 'custom', payload: { type: 'fine', data: EMAILS.events } },
          {
            sessionId: 'red-fail',
            agentId: 'agent-red',
            eventType: 'llm_response',
            payload: {
              callId: 'c1',
              provider: 'openai',
              model: 'gpt-4o',
              completion: EMAILS.events,
              finishReason: 'stop',
              usage: { inputTokens: 10, outputTokens: 2 },
              costUsd: 0,
              latencyMs: 5,
            },
          },
        ],
      },
    });
    const error = assertErrorBody(response, 422, 'a rule leaving a number a marker');
    assert.equal(error.code, 'redaction_failed');
    assert.equal(error.details?.[0]?.path, 'events.1');
    assert.match(error.details![0]!.message, new RegExp(`rule ${rule.id}.*usage\\.inputTokens`));
    assert.equal(await eventTotal(observe), before, 'nothing of the batch stored');
    assert.equal((await observe.call({ method: 'GET', url: '/api/sessions/red-fail' })).statusCode, 404, 'not even its session');

    const disabled = await observe.call({ method: 'PUT', url: `/api/redaction/rules/${rule.id}`, payload: { enabled: false } });
    assert.equal(disabled.statusCode, 200, disabled.body);
    assert.equal((await observe.call({ method: 'DELETE', url: `/api/redaction/rules/${rule.id}` })).statusCode, 200);

    const changes = await observe.call({ method: 'GET', url: '/api/audit/changes?resource=redaction_rule' });
    assert.equal(changes.statusCode, 200, changes.body);
    const entries = (changes.json() as { entries: { action: string; resourceId: string; actor: string }[] }).entries.filter((e) => e.resourceId === rule.id);
    assert.deepEqual(entries.map((e) => e.action).sort(), ['created', 'deleted', 'disabled']);
    for (const entry of entries) assert.equal(entry.actor, 'api:test');
  });

  test('a regular expression that can backtrack catastrophically is refused at creation with 400; nothing stored or logged', async () => {
    const response = await observe.call({ method: 'POST', url: '/api/redaction/rules', payload: { name: 'bad', kind: 'regex', pattern: '(a+)+$' } });
    assert.match(assertErrorBody(response, 400, 'ReDoS').error, /backtrack/);
    const list = await observe.call({ method: 'GET', url: '/api/redaction/rules' });
    assert.deepEqual(
      (list.json() as { rules: { name: string }[] }).rules.filter((r) => r.name === 'bad'),
      [],
    );
  });

  test('dry run: what a rule would change on the most recent events, changing nothing', async () => {
    // Later than every other event of the file: the two most recent.
    const latest = '2027-01-01T00:00:00.000Z';
    await ingestEvents(observe, [
      { sessionId: 'red-dry', agentId: 'agent-red', eventType: 'custom', timestamp: latest, payload: { type: 'order', data: 'order ORD-77812 shipped' } },
      { sessionId: 'red-dry', agentId: 'agent-red', eventType: 'custom', timestamp: latest, payload: { type: 'order', data: 'nothing here' } },
    ]);
    const before = await everyTableText(observe);
    const response = await observe.call({
      method: 'POST',
      url: '/api/redaction/dry-run',
      payload: { rule: { kind: 'regex', pattern: 'ORD-\\d+', label: 'order' }, limit: 2 },
    });
    assert.equal(response.statusCode, 200, response.body);
    const answer = response.json() as { examined: number; matched: number; events: { sessionId: string; payload: { data: string }; redactions: unknown }[] };
    assert.equal(answer.examined, 2);
    assert.equal(answer.matched, 1);
    assert.equal(answer.events[0]!.payload.data, 'order [redacted:order] shipped');
    assert.deepEqual(answer.events[0]!.redactions, [{ rule: 'dry-run', count: 1 }]);
    assert.deepEqual(await everyTableText(observe), before, 'no table changed');
    assert.ok((await eventsOfSession(observe, 'red-dry')).some((event) => event.payload.data === 'order ORD-77812 shipped'));

    const nothing = await observe.call({ method: 'POST', url: '/api/redaction/dry-run', payload: { limit: 5 } });
    assertErrorBody(nothing, 400, 'nothing to try');
  });

  test('the raw values appear in no table (and not in the SQLite file after a checkpoint)', async () => {
    await assertStoredNowhere(observe, RAW_VALUES);
  });
});

await describeEachDatabase('redaction with REDACTION_HMAC_KEY: equal values get equal markers', (backend) => {
  let observe: TestObserve;
  const KEY = 'redaction-hmac-key-0123456789';
  before(async () => {
    observe = await startTestObserve(backend, { env: { REDACTION_DETECTORS: 'email', REDACTION_HMAC_KEY: KEY } });
  });
  after(() => observe.close());

  test('the marker carries the first 16 hex digits of HMAC-SHA256(key, value)', async () => {
    const acks = await ingestEvents(
      observe,
      ['ann@example.com', 'ann@example.com', 'bob@example.com'].map((email) => ({
        sessionId: 'red-hmac',
        agentId: 'agent-red',
        eventType: 'custom',
        timestamp: NOW_ISO,
        payload: { type: 'mail', data: email },
      })),
    );
    const markers = await Promise.all(acks.map(async (ack) => (await getEvent(observe, ack.id)).payload.data));
    const expected = (value: string) => `[redacted:email:${createHmac('sha256', KEY).update(value).digest('hex').slice(0, 16)}]`;
    assert.deepEqual(markers, [expected('ann@example.com'), expected('ann@example.com'), expected('bob@example.com')]);
    await assertVerifies(observe, 'red-hmac');
    await assertStoredNowhere(observe, ['ann@example.com', 'bob@example.com']);
  });
});
