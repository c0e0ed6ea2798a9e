import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { assertErrorBody, ingest, startTestObserve, type TestObserve } from '../testing.ts';
import type { Event } from './schemas.ts';

/** An event as the API answers it. */
type EventOut = Event;

interface EventList {
  events: EventOut[];
  total: number;
  hasMore: boolean;
}

interface ErrorBody {
  error: string;
  status: number;
  details?: { path: string; message: string }[];
}

interface IncomingEvent {
  sessionId: string;
  agentId: string;
  eventType: string;
  severity?: string;
  timestamp?: string;
  metadata?: Record<string, unknown>;
  payload: Record<string, unknown>;
}

/** What the test knows about one stored event, to compute the expected answer of any query. */
interface Known {
  id: string;
  ts: number;
  sessionId: string;
  agentId: string;
  eventType: string;
  severity: string;
}

const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SEVERITIES = ['debug', 'info', 'warn', 'error', 'critical'] as const;
const BASE = Date.parse('2026-11-20T00:00:00.000Z');
const MINUTE = 60_000;

const SESSIONS = [
  { id: 'q-alpha', agentId: 'agent-a' },
  { id: 'q-beta', agentId: 'agent-b' },
  { id: 'q-gamma', agentId: 'agent-a' },
  { id: 'q-delta', agentId: 'agent-c' },
] as const;

const TYPES = ['tool_call', 'tool_response', 'tool_error', 'llm_response', 'cost_tracked', 'custom', 'llm_call'] as const;

function genericPayload(type: (typeof TYPES)[number], i: number): Record<string, unknown> {
  switch (type) {
    case 'tool_call':
      return { toolName: 'lookup', callId: `c${i}`, arguments: { q: `lookup number ${i}` } };
    case 'tool_response':
      return { toolName: 'lookup', callId: `c${i}`, result: { rows: i }, durationMs: i };
    case 'tool_error':
      return { toolName: 'lookup', callId: `c${i}`, error: 'timeout reached', durationMs: i };
    case 'llm_response':
      return {
        callId: `l${i}`,
        provider: 'openai',
        model: 'gpt-4o',
        completion: 'done',
        finishReason: 'stop',
        usage: { inputTokens: 10, outputTokens: 5 },
        costUsd: 0.001,
        latencyMs: 100,
      };
    case 'cost_tracked':
      return { provider: 'openai', model: 'gpt-4o', inputTokens: 1, outputTokens: 1, totalTokens: 2, costUsd: 0.0001 };
    case 'custom':
      return { type: 'tick', data: { n: i } };
    case 'llm_call':
      return { callId: `l${i}`, provider: 'openai', model: 'gpt-4o', messages: [{ role: 'user', content: 'hello there' }] };
  }
}

/** Deterministic permutation of 0..n-1, so timestamp order differs from insertion order. */
function permutation(n: number): number[] {
  const slots = Array.from({ length: n }, (_, i) => i);
  let state = 12345;
  for (let i = n - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2147483648;
    const j = state % (i + 1);
    [slots[i], slots[j]] = [slots[j]!, slots[i]!];
  }
  return slots;
}

const GENERIC_COUNT = 530;

/** Events whose payload words the search tests look for; no other event contains these words. */
const SEARCHABLE = {
  phrase: { type: 'note', data: { text: 'amber falcon rises at dawn' } },
  reversed: { type: 'note', data: { text: 'the falcon amber is rare' } },
  mixedCase: { toolName: 'spot', callId: 'sp3', arguments: { q: 'Amber Falcon sighting' } },
  glued: { type: 'note', data: { text: 'amberfalcon compound' } },
  escaped: { type: 'note', data: { text: 'first line\nsecond line\tthird "quoted" word' } },
} as const;

function buildDataset(): IncomingEvent[] {
  const events: IncomingEvent[] = [];
  for (let i = 0; i < GENERIC_COUNT; i++) {
    const session = SESSIONS[i % SESSIONS.length]!;
    const type = TYPES[i % TYPES.length]!;
    events.push({
      sessionId: session.id,
      agentId: session.agentId,
      eventType: type,
      severity: SEVERITIES[Math.floor(i / 3) % SEVERITIES.length]!,
      payload: genericPayload(type, i),
    });
  }
  const search = (eventType: string, payload: Record<string, unknown>): IncomingEvent => ({
    sessionId: 'q-search',
    agentId: 'agent-s',
    eventType,
    severity: 'info',
    payload,
  });
  events.push(
    search('custom', SEARCHABLE.phrase),
    search('custom', SEARCHABLE.reversed),
    search('tool_call', SEARCHABLE.mixedCase),
    search('custom', SEARCHABLE.glued),
    search('custom', SEARCHABLE.escaped),
  );
  // Every event gets a distinct minute; the slot order is shuffled against insertion order.
  const slots = permutation(events.length);
  events.forEach((event, i) => {
    event.timestamp = new Date(BASE + slots[i]! * MINUTE).toISOString();
  });
  return events;
}

// Equal timestamps fall back to id order (ids are sortable: insertion order), in the same direction.
const byTsAsc = (a: Known, b: Known) => a.ts - b.ts || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const byTsDesc = (a: Known, b: Known) => -byTsAsc(a, b);

await describeEachDatabase('GET /api/events', (backend) => {
  let observe: TestObserve;
  const known: Known[] = [];
  const idOfSearchable = new Map<keyof typeof SEARCHABLE, string>();

  before(async () => {
    observe = await startTestObserve(backend);
    const dataset = buildDataset();
    const response = await observe.call({ method: 'POST', url: '/api/events', payload: { events: dataset } });
    assert.equal(response.statusCode, 201, response.body);
    const acknowledged = (response.json() as { events: { id: string }[] }).events;
    dataset.forEach((event, i) => {
      known.push({
        id: acknowledged[i]!.id,
        ts: Date.parse(event.timestamp!),
        sessionId: event.sessionId,
        agentId: event.agentId,
        eventType: event.eventType,
        severity: event.severity ?? 'info',
      });
    });
    const keys = Object.keys(SEARCHABLE) as (keyof typeof SEARCHABLE)[];
    keys.forEach((key, k) => idOfSearchable.set(key, acknowledged[GENERIC_COUNT + k]!.id));
  });
  after(() => observe.close());

  async function list(params: Record<string, string | number>): Promise<EventList> {
    const qs = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();
    const response = await observe.call({ method: 'GET', url: `/api/events${qs ? `?${qs}` : ''}` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as EventList;
  }

  /** Asserts one page against the expected matching set (any order; sorted here by the requested order). */
  async function expectPage(
    params: Record<string, string | number>,
    matching: Known[],
    page: { order?: 'asc' | 'desc'; limit?: number; offset?: number } = {},
  ): Promise<EventList> {
    const order = page.order ?? 'desc';
    const limit = page.limit ?? 50;
    const offset = page.offset ?? 0;
    const sorted = [...matching].sort(order === 'asc' ? byTsAsc : byTsDesc);
    const body = await list(params);
    assert.deepEqual(
      body.events.map((e) => e.id),
      sorted.slice(offset, offset + limit).map((k) => k.id),
    );
    assert.equal(body.total, matching.length, 'total is the exact number of matching events');
    assert.equal(body.hasMore, offset + limit < matching.length, 'hasMore');
    return body;
  }

  test('without parameters: newest first, 50 events, exact total, hasMore true', async () => {
    const body = await expectPage({}, known);
    assert.equal(body.events.length, 50);
    assert.equal(body.total, GENERIC_COUNT + 5);
    assert.equal(body.hasMore, true);
    for (let i = 1; i < body.events.length; i++) {
      assert.ok(body.events[i - 1]!.timestamp > body.events[i]!.timestamp, 'strictly descending timestamps');
    }
  });

  test('order=asc lists oldest first, order=desc equals the default', async () => {
    const asc = await expectPage({ order: 'asc' }, known, { order: 'asc' });
    assert.equal(asc.events[0]!.timestamp, new Date(BASE).toISOString());
    const desc = await expectPage({ order: 'desc' }, known, { order: 'desc' });
    const byDefault = await list({});
    assert.deepEqual(
      desc.events.map((e) => e.id),
      byDefault.events.map((e) => e.id),
    );
    // Timestamp order, not insertion order: the dataset's slots are shuffled.
    assert.notDeepEqual(
      asc.events.map((e) => e.id),
      known.slice(0, 50).map((k) => k.id),
    );
  });

  test('limit=500 (the maximum) returns 500 events and hasMore while more match', async () => {
    const body = await expectPage({ limit: 500 }, known, { limit: 500 });
    assert.equal(body.events.length, 500);
    assert.equal(body.hasMore, true);
  });

  test('limit=1 returns exactly one event', async () => {
    const body = await expectPage({ limit: 1, order: 'asc' }, known, { limit: 1, order: 'asc' });
    assert.equal(body.events.length, 1);
  });

  test('offset pages through every event without overlap; hasMore is false on the last page', async () => {
    const seen: string[] = [];
    const flags: boolean[] = [];
    for (let offset = 0; offset < known.length; offset += 200) {
      const body = await expectPage({ order: 'asc', limit: 200, offset }, known, { order: 'asc', limit: 200, offset });
      seen.push(...body.events.map((e) => e.id));
      flags.push(body.hasMore);
    }
    assert.deepEqual(flags, [true, true, false]);
    assert.deepEqual(
      seen,
      [...known].sort(byTsAsc).map((k) => k.id),
    );
    assert.equal(new Set(seen).size, known.length);
  });

  test('hasMore is false when offset + page exactly reaches the total', async () => {
    const total = known.length;
    const body = await expectPage({ offset: total - 10, limit: 10 }, known, { offset: total - 10, limit: 10 });
    assert.equal(body.events.length, 10);
    assert.equal(body.hasMore, false);
    const oneShort = await expectPage({ offset: total - 11, limit: 10 }, known, { offset: total - 11, limit: 10 });
    assert.equal(oneShort.hasMore, true);
  });

  test('offset past the end: no events, total unchanged, hasMore false', async () => {
    const body = await expectPage({ offset: 10_000 }, known, { offset: 10_000 });
    assert.deepEqual(body.events, []);
    assert.equal(body.total, known.length);
    assert.equal(body.hasMore, false);
  });

  test('sessionId filters to one session; total and hasMore follow the filter', async () => {
    const matching = known.filter((k) => k.sessionId === 'q-beta');
    assert.equal(matching.length, Math.ceil((GENERIC_COUNT - 1) / 4));
    const body = await expectPage({ sessionId: 'q-beta' }, matching);
    assert.ok(body.events.every((e) => e.sessionId === 'q-beta'));
    await expectPage({ sessionId: 'q-beta', limit: matching.length }, matching, { limit: matching.length });
    await expectPage({ sessionId: 'q-beta', limit: matching.length - 1 }, matching, { limit: matching.length - 1 });
    const last = await expectPage({ sessionId: 'q-beta', offset: matching.length - 1, limit: 5, order: 'asc' }, matching, {
      offset: matching.length - 1,
      limit: 5,
      order: 'asc',
    });
    assert.equal(last.events.length, 1);
    assert.equal(last.hasMore, false);
  });

  test('sessionId of an unknown session matches nothing', async () => {
    const body = await expectPage({ sessionId: 'q-nobody' }, []);
    assert.equal(body.total, 0);
  });

  test('agentId filters across sessions of that agent', async () => {
    const matching = known.filter((k) => k.agentId === 'agent-a');
    const body = await expectPage({ agentId: 'agent-a', limit: 500 }, matching, { limit: 500 });
    assert.deepEqual(new Set(body.events.map((e) => e.sessionId)), new Set(['q-alpha', 'q-gamma']));
    await expectPage({ agentId: 'agent-a', offset: 100, limit: 20 }, matching, { offset: 100, limit: 20 });
  });

  test('eventType filters by one type', async () => {
    const matching = known.filter((k) => k.eventType === 'tool_error');
    const body = await expectPage({ eventType: 'tool_error', limit: 500 }, matching, { limit: 500 });
    assert.ok(body.events.length > 0 && body.events.every((e) => e.eventType === 'tool_error'));
  });

  test('eventType accepts a comma-separated list', async () => {
    const matching = known.filter((k) => k.eventType === 'tool_call' || k.eventType === 'custom');
    const body = await expectPage({ eventType: 'tool_call,custom', limit: 500 }, matching, { limit: 500 });
    assert.deepEqual(new Set(body.events.map((e) => e.eventType)), new Set(['tool_call', 'custom']));
    await expectPage({ eventType: 'tool_call,custom', limit: 30, offset: 30 }, matching, { limit: 30, offset: 30 });
  });

  test('severity filters by one level', async () => {
    const matching = known.filter((k) => k.severity === 'critical');
    const body = await expectPage({ severity: 'critical', limit: 500 }, matching, { limit: 500 });
    assert.ok(body.events.length > 0 && body.events.every((e) => e.severity === 'critical'));
  });

  test('severity accepts a comma-separated list', async () => {
    const matching = known.filter((k) => k.severity === 'warn' || k.severity === 'error');
    const body = await expectPage({ severity: 'warn,error', limit: 500 }, matching, { limit: 500 });
    assert.deepEqual(new Set(body.events.map((e) => e.severity)), new Set(['warn', 'error']));
  });

  test('from and to bound the range, both inclusive', async () => {
    const from = BASE + 100 * MINUTE;
    const to = BASE + 160 * MINUTE;
    const matching = known.filter((k) => k.ts >= from && k.ts <= to);
    assert.equal(matching.length, 61, 'one event per minute, both ends included');
    const body = await expectPage({ from: new Date(from).toISOString(), to: new Date(to).toISOString(), order: 'asc', limit: 100 }, matching, {
      order: 'asc',
      limit: 100,
    });
    assert.equal(body.events[0]!.timestamp, new Date(from).toISOString());
    assert.equal(body.events.at(-1)!.timestamp, new Date(to).toISOString());
  });

  test('from alone and to alone are open-ended', async () => {
    const cut = BASE + 500 * MINUTE;
    await expectPage(
      { from: new Date(cut).toISOString(), limit: 500 },
      known.filter((k) => k.ts >= cut),
      { limit: 500 },
    );
    await expectPage(
      { to: new Date(cut).toISOString(), limit: 500 },
      known.filter((k) => k.ts <= cut),
      { limit: 500 },
    );
  });

  test('from/to with a UTC offset denote the same instants', async () => {
    const from = BASE + 10 * MINUTE; // 2026-11-20T00:10:00.000Z
    const to = BASE + 20 * MINUTE; // 2026-11-20T00:20:00.000Z
    const matching = known.filter((k) => k.ts >= from && k.ts <= to);
    await expectPage({ from: '2026-11-20T02:10:00.000+02:00', to: '2026-11-19T19:20:00-05:00', limit: 100 }, matching, {
      limit: 100,
    });
  });

  test('filters combine with AND', async () => {
    const from = BASE + 50 * MINUTE;
    const to = BASE + 400 * MINUTE;
    const matching = known.filter(
      (k) =>
        k.agentId === 'agent-a' &&
        (k.eventType === 'tool_call' || k.eventType === 'tool_error') &&
        (k.severity === 'info' || k.severity === 'critical') &&
        k.ts >= from &&
        k.ts <= to,
    );
    assert.ok(matching.length > 3, 'the dataset exercises this combination');
    const params = {
      agentId: 'agent-a',
      eventType: 'tool_call,tool_error',
      severity: 'info,critical',
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
    };
    await expectPage({ ...params, limit: 500 }, matching, { limit: 500 });
    await expectPage({ ...params, limit: 2, offset: 1, order: 'asc' }, matching, { limit: 2, offset: 1, order: 'asc' });
  });

  test('search matches a phrase of payload words, in order, case-insensitively', async () => {
    const ids = (keys: (keyof typeof SEARCHABLE)[]) => known.filter((k) => keys.some((key) => idOfSearchable.get(key) === k.id));
    await expectPage({ search: 'amber falcon' }, ids(['phrase', 'mixedCase']));
    await expectPage({ search: 'AMBER Falcon' }, ids(['phrase', 'mixedCase']));
    await expectPage({ search: 'falcon' }, ids(['phrase', 'reversed', 'mixedCase']));
    await expectPage({ search: 'falcon amber' }, ids(['reversed']));
    await expectPage({ search: 'amberfalcon' }, ids(['glued']));
    await expectPage({ search: 'falcon rises at dawn' }, ids(['phrase']));
  });

  test('search matches whole words only and nothing when no payload has the words', async () => {
    await expectPage({ search: 'falc' }, []);
    await expectPage({ search: 'osprey' }, []);
    await expectPage({ search: 'dawn falcon' }, []);
  });

  test('search combines with other filters, total and hasMore', async () => {
    const matching = known.filter((k) => k.id === idOfSearchable.get('phrase') || k.id === idOfSearchable.get('reversed'));
    await expectPage({ search: 'falcon', eventType: 'custom' }, matching);
    await expectPage({ search: 'falcon', eventType: 'custom', limit: 1 }, matching, { limit: 1 });
    await expectPage({ search: 'falcon', sessionId: 'q-alpha' }, []);
  });

  test('search finds words next to escaped characters (newline, tab, quotes) in payload strings', async () => {
    const escaped = known.filter((k) => k.id === idOfSearchable.get('escaped'));
    await expectPage({ search: 'first line' }, escaped);
    await expectPage({ search: 'quoted word' }, escaped);
    // "second" follows a newline and "third" a tab inside the JSON string.
    await expectPage({ search: 'second line' }, escaped);
    await expectPage({ search: 'third' }, escaped);
  });

  test('GET /api/events/:id returns the whole Event', async () => {
    const target = known.find((k) => k.id === idOfSearchable.get('mixedCase'))!;
    const response = await observe.call({ method: 'GET', url: `/api/events/${target.id}` });
    assert.equal(response.statusCode, 200);
    const event = response.json() as EventOut;
    assert.deepEqual(Object.keys(event).sort(), [
      'agentId',
      'eventType',
      'hash',
      'id',
      'metadata',
      'payload',
      'prevHash',
      'seq',
      'sessionId',
      'severity',
      'timestamp',
      'writtenBy',
    ]);
    assert.equal(event.id, target.id);
    assert.equal(event.sessionId, 'q-search');
    assert.equal(event.agentId, 'agent-s');
    assert.equal(event.eventType, 'tool_call');
    assert.equal(event.severity, 'info');
    assert.deepEqual(event.payload, SEARCHABLE.mixedCase);
    assert.deepEqual(event.metadata, {});
    assert.match(event.timestamp, ISO_MS_UTC);
    assert.equal(Date.parse(event.timestamp), target.ts);
    assert.equal(event.seq, 2, 'third event of session q-search');
    assert.match(event.hash, /^[0-9a-f]{64}$/);
    assert.match(event.prevHash ?? '', /^[0-9a-f]{64}$/);
    // The same object as the list returns.
    const listed = await list({ sessionId: 'q-search', order: 'asc' });
    assert.deepEqual(
      listed.events.find((e) => e.id === target.id),
      event,
    );
    assert.equal(event.prevHash, listed.events.find((e) => e.seq === 1)!.hash);
  });

  test('GET /api/events/:id of the first event of a session has prevHash null', async () => {
    const first = (await list({ sessionId: 'q-delta', limit: 500 })).events.find((e) => e.seq === 0)!;
    const response = await observe.call({ method: 'GET', url: `/api/events/${first.id}` });
    assert.equal(response.statusCode, 200);
    assert.equal((response.json() as EventOut).prevHash, null);
  });

  test('GET /api/events/:id of an unknown id is 404 in the error body', async () => {
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/events/0190f000-0000-7000-8000-000000000000' }), 404);
  });

  const badQueries: [string, string][] = [
    ['limit=0', 'limit=0'],
    ['limit=501', 'limit=501'],
    ['limit not a number', 'limit=ten'],
    ['offset=-1', 'offset=-1'],
    ['order=up', 'order=up'],
    ['unknown eventType', 'eventType=bogus'],
    ['unknown eventType in a list', 'eventType=tool_call,bogus'],
    ['unknown severity', 'severity=fatal'],
    ['unknown severity in a list', 'severity=info,loud'],
    ['non-ISO from', 'from=yesterday'],
    ['non-ISO from (day/month/year)', 'from=22%2F11%2F2026'],
    ['non-ISO to', 'to=2026-13-45T99:00:00Z'],
  ];
  for (const [name, qs] of badQueries) {
    test(`400 in the error body for ${name}`, async () => {
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/events?${qs}` }), 400, name);
    });
  }

  // Timestamp tests ingest more events; they run last and add what they store to `known`.
  const ingestKnown = async (events: IncomingEvent[]) => {
    const ids = await ingest(observe, events);
    for (const [i, id] of ids.entries()) {
      const stored = (await observe.call({ method: 'GET', url: `/api/events/${id}` })).json() as EventOut;
      known.push({
        id,
        ts: Date.parse(stored.timestamp),
        sessionId: events[i]!.sessionId,
        agentId: events[i]!.agentId,
        eventType: events[i]!.eventType,
        severity: events[i]!.severity ?? 'info',
      });
    }
    return ids;
  };
  const fetchEvent = async (id: string) => {
    const response = await observe.call({ method: 'GET', url: `/api/events/${id}` });
    assert.equal(response.statusCode, 200);
    return response.json() as EventOut;
  };
  const custom = (timestamp?: string): IncomingEvent => ({
    sessionId: 'ts-session',
    agentId: 'agent-ts',
    eventType: 'custom',
    payload: { type: 't', data: null },
    ...(timestamp === undefined ? {} : { timestamp }),
  });

  test('a client timestamp with an offset is stored and returned as UTC with milliseconds', async () => {
    const [plus, minus, noMs] = await ingestKnown([
      custom('2026-11-21T12:30:15.250+02:00'),
      custom('2026-11-21T05:30:15.250-05:00'),
      custom('2026-11-21T12:30:15+02:00'),
    ]);
    assert.equal((await fetchEvent(plus!)).timestamp, '2026-11-21T10:30:15.250Z');
    assert.equal((await fetchEvent(minus!)).timestamp, '2026-11-21T10:30:15.250Z');
    assert.equal((await fetchEvent(noMs!)).timestamp, '2026-11-21T10:30:15.000Z');
    // And the list and range filter agree with the UTC instant.
    const listed = (
      await observe.call({
        method: 'GET',
        url: `/api/events?from=${encodeURIComponent('2026-11-21T10:30:15.250Z')}&to=${encodeURIComponent('2026-11-21T12:30:15.250+02:00')}`,
      })
    ).json() as EventList;
    assert.deepEqual(new Set(listed.events.map((e) => e.id)), new Set([plus, minus]));
    assert.ok(listed.events.every((e) => e.timestamp === '2026-11-21T10:30:15.250Z'));
  });

  test('a missing timestamp defaults to the clock time', async () => {
    const [id] = await ingestKnown([custom()]);
    const event = await fetchEvent(id!);
    assert.equal(event.timestamp, '2026-11-22T10:00:00.000Z');
    assert.match(event.timestamp, ISO_MS_UTC);
  });

  test('the default follows the clock', async () => {
    const clock = observe.clock as { advance(ms: number): void };
    clock.advance(1_500);
    try {
      const [id] = await ingestKnown([custom()]);
      assert.equal((await fetchEvent(id!)).timestamp, '2026-11-22T10:00:01.500Z');
    } finally {
      clock.advance(-1_500);
    }
  });

  test('a non-ISO timestamp at ingestion is a 400 and stores nothing', async () => {
    for (const timestamp of ['22/11/2026 10:00', 'yesterday', '2026-11-22T25:00:00Z']) {
      const response = await observe.call({
        method: 'POST',
        url: '/api/events',
        payload: { events: [{ ...custom(), sessionId: 'ts-bad', timestamp }] },
      });
      assert.equal(response.statusCode, 400, timestamp);
      const body = response.json() as ErrorBody;
      assert.equal(body.status, 400);
      assert.ok(
        body.details?.some((d) => d.path === 'events.0.timestamp'),
        JSON.stringify(body),
      );
    }
    assert.equal((await observe.call({ method: 'GET', url: '/api/sessions/ts-bad' })).statusCode, 404);
  });

  test('after further batches the unfiltered and per-session totals stay exact', async () => {
    await expectPage({}, known);
    await expectPage({ order: 'asc', limit: 500, offset: 100 }, known, { order: 'asc', limit: 500, offset: 100 });
    await expectPage(
      { sessionId: 'ts-session' },
      known.filter((k) => k.sessionId === 'ts-session'),
    );
  });
});
