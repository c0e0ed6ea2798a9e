import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { canonicalJson, hashBytes, hashHex } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { buildObserveService } from '../app.ts';
import { ingestEvents, insertEventCopy, startTestObserve, type TestObserve } from '../testing.ts';
import { chainHash, chainHashOfCanonical, chainText, ChainVerifier, type ChainFields, type StoredLink } from './chain.ts';
import type { Event } from './schemas.ts';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * An independent RFC 8785 serialiser, as an auditor would write it offline: object keys sorted by
 * UTF-16 code units (the default sort), primitives as ECMAScript JSON.stringify writes them.
 */
function jcs(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(jcs).join(',')}]`;
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${jcs(record[key])}`)
    .join(',')}}`;
}

/** An event as the API answers it. */
type EventOut = Event;

interface ChainBreak {
  seq: number;
  eventId: string | null;
  reason: string;
}

interface VerifyBody {
  sessionId: string;
  valid: boolean;
  eventCount: number;
  headHash: string | null;
  brokenAt: ChainBreak | null;
}

interface ErrorBody {
  error: string;
  status: number;
  details?: { path: string; message: string }[];
}

describe('chainHash', () => {
  const example: ChainFields = {
    id: '0192a4e0-7c1d-7000-8000-00000000abcd',
    seq: 3,
    timestamp: '2026-11-22T10:00:00.000Z',
    sessionId: 'sess-ü-1',
    agentId: 'agent-✓',
    eventType: 'tool_call',
    severity: 'warn',
    payload: {
      toolName: 'search',
      callId: 'c-1',
      arguments: {
        query: 'café ☕ 日本語 😀',
        limit: 10,
        nested: { z: null, é: 'accent', ｚ: 'fullwidth', '😀': 'emoji', a: [1, 2.5, true, false, 'x', { y: 1, b: 0 }] },
        numbers: [1e21, -0, 0.000001, 1e-7, -3.75],
        text: 'line1\nline2 "quoted" \\ back\ttab\u0001',
      },
      Zeta: 'upper',
      '10': 'ten',
      '9': 'nine',
    },
    metadata: { env: 'prod', trace: { spanId: 'b2', parent: null, attrs: { k1: 1, 'k-2': 2 } } },
    prevHash: 'ab'.repeat(32),
  };

  // Written by hand: keys sorted by UTF-16 code units at every level ("10" < "9" < "Zeta" < "arguments";
  // "é" U+00E9 < "😀" U+D83D.. < "ｚ" U+FF5A), ES number forms (1e+21, -0 as 0, 1e-7), JSON string escapes.
  const expectedCanonical =
    String.raw`{"agentId":"agent-✓","eventType":"tool_call","id":"0192a4e0-7c1d-7000-8000-00000000abcd",` +
    String.raw`"metadata":{"env":"prod","trace":{"attrs":{"k-2":2,"k1":1},"parent":null,"spanId":"b2"}},` +
    String.raw`"payload":{"10":"ten","9":"nine","Zeta":"upper","arguments":{"limit":10,` +
    String.raw`"nested":{"a":[1,2.5,true,false,"x",{"b":0,"y":1}],"z":null,"é":"accent","😀":"emoji","ｚ":"fullwidth"},` +
    String.raw`"numbers":[1e+21,0,0.000001,1e-7,-3.75],"query":"café ☕ 日本語 😀",` +
    String.raw`"text":"line1\nline2 \"quoted\" \\ back\ttab\u0001"},"callId":"c-1","toolName":"search"},` +
    `"prevHash":"${'ab'.repeat(32)}","seq":3,"sessionId":"sess-ü-1","severity":"warn",` +
    `"timestamp":"2026-11-22T10:00:00.000Z","v":1}`;

  test('equals sha256 hex of the RFC 8785 form of {v:1, id, seq, timestamp, ..., prevHash}', () => {
    assert.equal(chainHash(example), sha256(expectedCanonical));
    // The hand-written text is what an independent serialiser produces too.
    assert.equal(jcs({ v: 1, ...example }), expectedCanonical);
  });

  test('the first link hashes prevHash as null', () => {
    const first: ChainFields = {
      id: '0192a4e0-7c1d-7000-8000-000000000001',
      seq: 0,
      timestamp: '2026-11-22T10:00:00.000Z',
      sessionId: 's',
      agentId: 'a',
      eventType: 'session_started',
      severity: 'info',
      payload: {},
      metadata: {},
      prevHash: null,
    };
    const text =
      '{"agentId":"a","eventType":"session_started","id":"0192a4e0-7c1d-7000-8000-000000000001","metadata":{},' +
      '"payload":{},"prevHash":null,"seq":0,"sessionId":"s","severity":"info","timestamp":"2026-11-22T10:00:00.000Z","v":1}';
    assert.equal(chainHash(first), sha256(text));
    assert.match(chainHash(first), /^[0-9a-f]{64}$/);
  });

  test('hashes the UTF-8 of chainText, however long the text and whatever stored text holds, its envelope parts kept right from link to link', () => {
    const link = { ...example, payload: undefined, metadata: undefined };
    for (const [payload, metadata] of [
      ['{"q":"café ☕ 日本語 😀"}', '{}'],
      // Stored text edited outside Vigil: lone surrogates at the edges of a part, text that is no JSON.
      ['\ud83d', '\udc00x'],
      ['not json \ud800', ''],
      [`{"long":"${'ü'.repeat(20_000)}"}`, '{}'],
    ]) {
      assert.equal(chainHashOfCanonical(link, payload!, metadata!), sha256(chainText(link, payload!, metadata!)), payload!.slice(0, 20));
    }
    // Consecutive links that share or change agent, type, session, severity and timestamp.
    for (const change of [
      {},
      { agentId: 'other' },
      { eventType: 'llm_call' },
      { sessionId: 's2' },
      { severity: 'info' },
      { timestamp: '2026-11-22T10:00:01.000Z' },
      {},
    ]) {
      const next = { ...link, ...change };
      assert.equal(chainHashOfCanonical(next, '{}', '{}'), sha256(chainText(next, '{}', '{}')));
      assert.equal(chainText(next, '{}', '{}'), jcs({ v: 1, ...next, payload: {}, metadata: {} }));
    }
  });

  test('does not depend on the key order of payload and metadata', () => {
    const payload = example.payload as Record<string, unknown>;
    const reordered: ChainFields = {
      ...example,
      payload: Object.fromEntries(Object.entries(payload).reverse()),
      metadata: { trace: { attrs: { 'k-2': 2, k1: 1 }, parent: null, spanId: 'b2' }, env: 'prod' },
    };
    assert.equal(chainHash(reordered), chainHash(example));
  });

  test('changes when any hashed field changes', () => {
    const base = chainHash(example);
    const variants: Partial<ChainFields>[] = [
      { id: `${example.id}0` },
      { seq: 4 },
      { timestamp: '2026-11-22T10:00:00.001Z' },
      { sessionId: 'sess-u-1' },
      { agentId: 'agent-x' },
      { eventType: 'custom' },
      { severity: 'info' },
      { payload: { ...(example.payload as object), toolName: 'Search' } },
      { metadata: { env: 'prod' } },
      { prevHash: null },
      { prevHash: 'ac'.repeat(32) },
    ];
    for (const variant of variants) {
      assert.notEqual(chainHash({ ...example, ...variant }), base, JSON.stringify(variant));
    }
  });
});

const T0 = Date.parse('2026-11-22T09:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

/** A six-event session: seq 0..5 in this order. */
function sixEvents(sessionId: string) {
  const agentId = 'agent-chain';
  return [
    { sessionId, agentId, eventType: 'session_started', timestamp: at(0), payload: { agentName: 'Chain Bot', tags: ['audit'] } },
    {
      sessionId,
      agentId,
      eventType: 'tool_call',
      timestamp: at(1),
      payload: { toolName: 'search', callId: 'c1', arguments: { q: 'weather in Paris', limit: 3 } },
    },
    {
      sessionId,
      agentId,
      eventType: 'tool_response',
      timestamp: at(2),
      payload: { toolName: 'search', callId: 'c1', result: { hits: ['a', 'b'] }, durationMs: 120 },
    },
    {
      sessionId,
      agentId,
      eventType: 'llm_response',
      timestamp: at(3),
      payload: {
        callId: 'l1',
        provider: 'anthropic',
        model: 'claude-sonnet',
        completion: 'It is sunny.',
        finishReason: 'stop',
        usage: { inputTokens: 120, outputTokens: 8 },
        costUsd: 0.0012,
        latencyMs: 900,
      },
    },
    {
      sessionId,
      agentId,
      eventType: 'custom',
      severity: 'warn',
      timestamp: at(4),
      metadata: { trace: { id: 't-1', sampled: true }, region: 'eu' },
      payload: { type: 'note', data: { text: 'café ☕ — ok' } },
    },
    { sessionId, agentId, eventType: 'session_ended', timestamp: at(5), payload: { reason: 'completed' } },
  ];
}

describe('ChainVerifier over links it has verified before', () => {
  /** A valid three-link chain as stored rows read it (fresh strings, as each read makes them). */
  function storedChain(): StoredLink[] {
    const links: StoredLink[] = [];
    let prevHash: string | null = null;
    for (let seq = 0; seq < 3; seq++) {
      const fields = {
        id: `memo-${seq}`,
        seq,
        timestamp: '2026-11-22T10:00:00.000Z',
        sessionId: 'memo',
        agentId: 'agent-memo',
        eventType: 'custom',
        severity: 'info',
        prevHash,
      };
      const payloadJson = canonicalJson({ type: 'step', data: { n: seq } });
      const hash = chainHashOfCanonical(fields, payloadJson, '{}');
      links.push({ ...fields, payloadJson: payloadJson.slice(0), metadataJson: '{}', hash, writtenBy: 'key:k1' });
      prevHash = hash;
    }
    return links;
  }
  const head = (links: StoredLink[]) => ({ lastSeq: links.length - 1, lastHash: links.at(-1)!.hash });
  const verdictOf = (links: StoredLink[]) => {
    const verifier = new ChainVerifier(head(links));
    for (const link of links) verifier.add(link);
    return verifier.finish();
  };

  // The verifier remembers links whose hash matched; a changed field must miss that memory and be hashed as stored.
  const changes: [string, (link: StoredLink) => StoredLink][] = [
    ['payload', (link) => ({ ...link, payloadJson: link.payloadJson.replace('"n":1', '"n":7') })],
    ['metadata', (link) => ({ ...link, metadataJson: '{"x":1}' })],
    ['timestamp', (link) => ({ ...link, timestamp: '2026-11-22T10:00:00.001Z' })],
    ['agentId', (link) => ({ ...link, agentId: 'agent-other' })],
    ['eventType', (link) => ({ ...link, eventType: 'llm_call' })],
    ['severity', (link) => ({ ...link, severity: 'error' })],
    ['sessionId', (link) => ({ ...link, sessionId: 'other' })],
    ['id', (link) => ({ ...link, id: 'memo-forged' })],
  ];
  for (const [field, change] of changes) {
    test(`a link changed in ${field} after a valid read is still found not to match its content`, () => {
      const links = storedChain();
      assert.equal(verdictOf(links).valid, true);
      assert.equal(verdictOf(storedChain()).valid, true, 'the same bytes read again verify');
      const tampered = storedChain();
      tampered[1] = change(tampered[1]!);
      const verdict = verdictOf(tampered);
      assert.equal(verdict.valid, false);
      assert.equal(verdict.brokenAt?.seq, 1);
      assert.equal(verdict.brokenAt?.reason, 'hash does not match the event content');
    });
  }

  test('the audit-log leaf check answers the same for a remembered link', () => {
    const links = storedChain();
    const leafOf = (hash: string) => sha256Hex01(hash);
    const withLeaves = (leaf: (link: StoredLink) => string | null) => {
      const verifier = new ChainVerifier(head(links));
      for (const link of links) verifier.add(link, leaf(link));
      return verifier.finish();
    };
    assert.equal(withLeaves((link) => leafOf(link.hash)).valid, true);
    assert.equal(withLeaves((link) => leafOf(link.hash)).valid, true, 'again, remembered');
    assert.equal(
      withLeaves((link) => (link.seq === 2 ? leafOf('0'.repeat(64)) : leafOf(link.hash))).brokenAt?.reason,
      'hash does not match the leaf the audit log recorded for the event',
    );
    assert.match(withLeaves((link) => (link.seq === 0 ? null : leafOf(link.hash))).brokenAt?.reason ?? '', /has no leaf in the audit log/);
  });
});

/** RFC 9162 leaf hash of a hex hash, as the audit log records it: SHA-256(0x00 || bytes). */
function sha256Hex01(hex: string): string {
  return createHash('sha256')
    .update(Buffer.concat([Buffer.from([0]), Buffer.from(hex, 'hex')]))
    .digest('hex');
}

await describeEachDatabase('hash chain over HTTP', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  const db = () => observe.service.context.database.db;

  /** Ingests the six-event session and returns its event ids by seq. */
  async function seed(sessionId: string): Promise<string[]> {
    const acks = await ingestEvents(observe, sixEvents(sessionId));
    const valid = await verdict(sessionId);
    assert.equal(valid.chainValid, true, 'valid before tampering');
    assert.equal(valid.verify.valid, true, 'valid before tampering');
    return acks.map((a) => a.id);
  }

  type TimelineBody = { events: EventOut[]; chainValid: boolean; brokenAt: VerifyBody['brokenAt'] };

  async function timeline(sessionId: string): Promise<TimelineBody> {
    const response = await observe.call({ method: 'GET', url: `/api/sessions/${encodeURIComponent(sessionId)}/timeline` });
    assert.equal(response.statusCode, 200, response.body);
    // The body is spliced from stored JSON, so its field names are checked here rather than by a serialiser.
    const body = response.json() as TimelineBody;
    assert.deepEqual(Object.keys(body).sort(), ['brokenAt', 'chainValid', 'events']);
    return body;
  }

  async function verify(sessionId: string): Promise<VerifyBody> {
    const response = await observe.call({ method: 'GET', url: `/api/audit/verify?sessionId=${encodeURIComponent(sessionId)}` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as VerifyBody;
  }

  async function verdict(sessionId: string): Promise<{ chainValid: boolean; verify: VerifyBody }> {
    const line = await timeline(sessionId);
    const verified = await verify(sessionId);
    // The timeline names the same break as /api/audit/verify (null when intact).
    assert.deepEqual(line.brokenAt, verified.brokenAt, 'timeline brokenAt');
    return { chainValid: line.chainValid, verify: verified };
  }

  async function expectBrokenAt(sessionId: string, seq: number, eventId?: string | null): Promise<VerifyBody> {
    const result = await verdict(sessionId);
    assert.equal(result.chainValid, false, 'timeline chainValid');
    assert.equal(result.verify.valid, false, 'verify valid');
    assert.ok(result.verify.brokenAt, 'verify names where the chain breaks');
    assert.equal(result.verify.brokenAt.seq, seq, `brokenAt.seq (${result.verify.brokenAt.reason})`);
    if (eventId !== undefined) assert.equal(result.verify.brokenAt.eventId, eventId, 'brokenAt.eventId');
    assert.equal(typeof result.verify.brokenAt.reason, 'string');
    return result.verify;
  }

  async function storedRow(id: string) {
    return db().selectFrom('events').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  }

  test('a fresh session verifies: timeline chainValid true, audit valid true', async () => {
    const ids = await ingestEvents(observe, sixEvents('chain-ok'));
    const line = await timeline('chain-ok');
    assert.equal(line.chainValid, true);
    assert.equal(line.brokenAt, null);
    assert.deepEqual(
      line.events.map((e) => e.seq),
      [0, 1, 2, 3, 4, 5],
    );
    assert.deepEqual(
      line.events.map((e) => e.id),
      ids.map((a) => a.id),
    );
    const result = await verify('chain-ok');
    assert.equal(result.sessionId, 'chain-ok');
    assert.equal(result.valid, true);
    assert.equal(result.eventCount, 6);
    assert.equal(result.brokenAt, null);
    assert.equal(result.headHash, ids[5]!.hash);
  });

  test('the chain re-verifies offline from the returned events with the documented recipe', async () => {
    const { events } = await timeline('chain-ok');
    let previous: string | null = null;
    for (const event of [...events].sort((a, b) => a.seq - b.seq)) {
      assert.equal(event.prevHash, previous, `prevHash of seq ${event.seq}`);
      const recomputed = sha256(
        jcs({
          v: 1,
          id: event.id,
          seq: event.seq,
          timestamp: event.timestamp,
          sessionId: event.sessionId,
          agentId: event.agentId,
          eventType: event.eventType,
          severity: event.severity,
          payload: event.payload,
          metadata: event.metadata,
          prevHash: event.prevHash,
        }),
      );
      assert.equal(event.hash, recomputed, `hash of seq ${event.seq}`);
      previous = event.hash;
    }
  });

  test('client timestamps out of order do not break the chain; the timeline is ascending by time', async () => {
    const events = sixEvents('chain-late').map((event, i) => ({ ...event, timestamp: at(100 - i * 10) }));
    const acks = await ingestEvents(observe, events);
    const line = await timeline('chain-late');
    assert.equal(line.chainValid, true);
    assert.deepEqual(
      line.events.map((e) => e.seq),
      [5, 4, 3, 2, 1, 0],
    );
    assert.deepEqual(
      line.events.map((e) => e.id),
      acks.map((a) => a.id).reverse(),
    );
    assert.equal((await verify('chain-late')).valid, true);
  });

  test('batches appended later continue the chain from the head', async () => {
    const [first] = await ingestEvents(observe, [sixEvents('chain-continue')[0]]);
    const [second, third] = await ingestEvents(observe, sixEvents('chain-continue').slice(1, 3));
    const line = await timeline('chain-continue');
    assert.equal(line.chainValid, true);
    const bySeq = [...line.events].sort((a, b) => a.seq - b.seq);
    assert.deepEqual(
      bySeq.map((e) => e.id),
      [first!.id, second!.id, third!.id],
    );
    assert.equal(bySeq[1]!.prevHash, first!.hash);
    assert.equal(bySeq[2]!.prevHash, second!.hash);
  });

  test('tampering payload is detected at that event', async () => {
    const ids = await seed('tamper-payload');
    const row = await storedRow(ids[2]!);
    const payload = JSON.parse(row.payload) as Record<string, unknown>;
    await db()
      .updateTable('events')
      .set({ payload: JSON.stringify({ ...payload, durationMs: 1 }) })
      .where('id', '=', ids[2]!)
      .execute();
    await expectBrokenAt('tamper-payload', 2, ids[2]);
  });

  test('tampering the payload of the first event is detected at seq 0', async () => {
    const ids = await seed('tamper-payload-first');
    await db()
      .updateTable('events')
      .set({ payload: JSON.stringify({ agentName: 'Other Bot', tags: ['audit'] }) })
      .where('id', '=', ids[0]!)
      .execute();
    await expectBrokenAt('tamper-payload-first', 0, ids[0]);
  });

  test('tampering the payload of the last event is detected at seq 5', async () => {
    const ids = await seed('tamper-payload-last');
    await db()
      .updateTable('events')
      .set({ payload: JSON.stringify({ reason: 'error' }) })
      .where('id', '=', ids[5]!)
      .execute();
    await expectBrokenAt('tamper-payload-last', 5, ids[5]);
  });

  // chain.ts: "Stored text is hashed as stored: any byte changed in the row breaks the chain." Rows
  // hold the RFC 8785 text, so even a re-serialisation with the same content is reported.
  test('rewriting the stored payload text, even with the same content, is detected at that event', async () => {
    const ids = await seed('reserialised');
    const row = await storedRow(ids[3]!);
    const payload = JSON.parse(row.payload) as Record<string, unknown>;
    const reordered = JSON.stringify(Object.fromEntries(Object.entries(payload).reverse()), null, 2);
    assert.notEqual(reordered, row.payload);
    await db().updateTable('events').set({ payload: reordered }).where('id', '=', ids[3]!).execute();
    await expectBrokenAt('reserialised', 3, ids[3]);
  });

  test('rows store payload and metadata as RFC 8785 text, the bytes the hash covers', async () => {
    const ids = await seed('stored-canonical');
    for (const id of ids) {
      const row = await storedRow(id);
      assert.equal(row.payload, jcs(JSON.parse(row.payload)));
      assert.equal(row.metadata, jcs(JSON.parse(row.metadata)));
    }
  });

  test('tampering metadata is detected at that event', async () => {
    const ids = await seed('tamper-metadata');
    await db()
      .updateTable('events')
      .set({ metadata: JSON.stringify({ trace: { id: 't-2', sampled: true }, region: 'eu' }) })
      .where('id', '=', ids[4]!)
      .execute();
    await expectBrokenAt('tamper-metadata', 4, ids[4]);
  });

  test('tampering severity is detected at that event', async () => {
    const ids = await seed('tamper-severity');
    await db().updateTable('events').set({ severity: 'critical' }).where('id', '=', ids[1]!).execute();
    await expectBrokenAt('tamper-severity', 1, ids[1]);
  });

  test('tampering event_type is detected at that event', async () => {
    const ids = await seed('tamper-type');
    await db().updateTable('events').set({ event_type: 'llm_call' }).where('id', '=', ids[3]!).execute();
    await expectBrokenAt('tamper-type', 3, ids[3]);
  });

  test('tampering agent_id is detected at that event', async () => {
    const ids = await seed('tamper-agent');
    await db().updateTable('events').set({ agent_id: 'agent-impostor' }).where('id', '=', ids[2]!).execute();
    await expectBrokenAt('tamper-agent', 2, ids[2]);
  });

  test('tampering ts by one millisecond is detected at that event', async () => {
    const ids = await seed('tamper-ts');
    const row = await storedRow(ids[2]!);
    await db()
      .updateTable('events')
      .set({ ts: Number(row.ts) + 1 })
      .where('id', '=', ids[2]!)
      .execute();
    await expectBrokenAt('tamper-ts', 2, ids[2]);
  });

  // verifyChain checks, at each position in seq order, the prevHash link and then the event's own
  // hash: a rewritten hash fails its own recomputation at that seq, before the next link is read.
  test('tampering hash is detected at that event', async () => {
    const ids = await seed('tamper-hash');
    await db()
      .updateTable('events')
      .set({ hash: hashBytes('f'.repeat(64)) })
      .where('id', '=', ids[2]!)
      .execute();
    await expectBrokenAt('tamper-hash', 2, ids[2]);
  });

  // SQLite columns take any type: the right hash written back as its hex text is not what ingest stores.
  test('a hash written back as its hex text instead of its bytes is detected at that event', async () => {
    const ids = await seed('tamper-hash-text');
    const row = await storedRow(ids[2]!);
    await db()
      .updateTable('events')
      .set({ hash: hashHex(row.hash) as unknown as Buffer })
      .where('id', '=', ids[2]!)
      .execute();
    await expectBrokenAt('tamper-hash-text', 2, ids[2]);
  });

  test('tampering the hash of the last event is detected at seq 5', async () => {
    const ids = await seed('tamper-hash-last');
    await db()
      .updateTable('events')
      .set({ hash: hashBytes('0'.repeat(64)) })
      .where('id', '=', ids[5]!)
      .execute();
    await expectBrokenAt('tamper-hash-last', 5, ids[5]);
  });

  test('tampering prev_hash is detected at that event', async () => {
    const ids = await seed('tamper-prev');
    await db()
      .updateTable('events')
      .set({ prev_hash: hashBytes('e'.repeat(64)) })
      .where('id', '=', ids[3]!)
      .execute();
    await expectBrokenAt('tamper-prev', 3, ids[3]);
  });

  test('giving the first event a prev_hash is detected at seq 0', async () => {
    const ids = await seed('tamper-prev-first');
    await db()
      .updateTable('events')
      .set({ prev_hash: hashBytes('e'.repeat(64)) })
      .where('id', '=', ids[0]!)
      .execute();
    await expectBrokenAt('tamper-prev-first', 0, ids[0]);
  });

  test('tampering id is detected at that event', async () => {
    const ids = await seed('tamper-id');
    const forged = '0192a4e0-0000-7000-8000-0000000f0f0f';
    await db().updateTable('events').set({ id: forged }).where('id', '=', ids[2]!).execute();
    await expectBrokenAt('tamper-id', 2, forged);
  });

  test('tampering seq (moved out of the sequence) is detected at that seq', async () => {
    const ids = await seed('tamper-seq');
    await db().updateTable('events').set({ seq: 100 }).where('id', '=', ids[2]!).execute();
    await expectBrokenAt('tamper-seq', 2);
  });

  test('tampering seq (duplicating the previous seq) is detected at that seq', async () => {
    const ids = await seed('tamper-seq-dup');
    await db().updateTable('events').set({ seq: 2 }).where('id', '=', ids[3]!).execute();
    await expectBrokenAt('tamper-seq-dup', 3);
  });

  test('deleting a middle event is detected at its position', async () => {
    const ids = await seed('delete-middle');
    await db().deleteFrom('events').where('id', '=', ids[2]!).execute();
    const result = await expectBrokenAt('delete-middle', 2, ids[3]);
    assert.equal(result.eventCount, 5);
  });

  test('deleting the first event is detected at seq 0', async () => {
    const ids = await seed('delete-first');
    await db().deleteFrom('events').where('id', '=', ids[0]!).execute();
    await expectBrokenAt('delete-first', 0, ids[1]);
  });

  test('deleting the last event is detected at the end of the chain', async () => {
    const ids = await seed('delete-last');
    await db().deleteFrom('events').where('id', '=', ids[5]!).execute();
    // Events 0..4 still link up; the session head records seq 5, so the break is at position 5.
    const result = await expectBrokenAt('delete-last', 5, null);
    assert.equal(result.eventCount, 5);
  });

  test("swapping two events' seq values is detected at the lower position", async () => {
    const ids = await seed('swap-seq');
    await db().updateTable('events').set({ seq: -1 }).where('id', '=', ids[1]!).execute();
    await db().updateTable('events').set({ seq: 1 }).where('id', '=', ids[3]!).execute();
    await db().updateTable('events').set({ seq: 3 }).where('id', '=', ids[1]!).execute();
    await expectBrokenAt('swap-seq', 1, ids[3]);
  });

  // Rows written straight into the database, never through ingest: the session's head does not
  // move, yet /api/events serves them. Verification covers every row carrying the session's id.
  // Sorts after every id the service generates (time-ordered), so a duplicate seq comes second.
  const forgedId = (n: number) => `ffffffff-ffff-7fff-bfff-${String(n).padStart(12, '0')}`;

  async function listed(sessionId: string): Promise<string[]> {
    const response = await observe.call({ method: 'GET', url: `/api/events?sessionId=${encodeURIComponent(sessionId)}&limit=100` });
    assert.equal(response.statusCode, 200, response.body);
    return (response.json() as { events: EventOut[] }).events.map((e) => e.id);
  }

  test('an event stored past the head with a garbage hash is served by /api/events and breaks the chain at its seq', async () => {
    const ids = await seed('past-head-garbage');
    const forgedEvent = forgedId(1);
    await insertEventCopy(observe.service.context.database, ids[5]!, {
      id: forgedEvent,
      seq: 6,
      prev_hash: hashBytes('a'.repeat(64)),
      hash: hashBytes('b'.repeat(64)),
    });
    assert.ok((await listed('past-head-garbage')).includes(forgedEvent), 'the stored row is served');
    const result = await expectBrokenAt('past-head-garbage', 6, forgedEvent);
    assert.match(result.brokenAt!.reason, /stored past the session head \(seq 5\)/);
    assert.match(result.brokenAt!.reason, new RegExp(forgedEvent));
    assert.equal(result.eventCount, 7, 'every stored event is counted');
    const line = await timeline('past-head-garbage');
    assert.ok(
      line.events.some((e) => e.id === forgedEvent),
      'the timeline shows what is stored',
    );
  });

  test('an event past the head that links perfectly onto the last one still breaks the chain: it is not the recorded head', async () => {
    const ids = await seed('past-head-linked');
    const forgedEvent = forgedId(2);
    const last = await storedRow(ids[5]!);
    const forgedFields: ChainFields = {
      id: forgedEvent,
      seq: 6,
      timestamp: new Date(Number(last.ts) + 1000).toISOString(),
      sessionId: 'past-head-linked',
      agentId: last.agent_id,
      eventType: 'custom',
      severity: 'info',
      payload: { type: 'note', data: 'written past the head' },
      metadata: {},
      prevHash: hashHex(last.hash),
    };
    await insertEventCopy(observe.service.context.database, ids[5]!, {
      id: forgedEvent,
      seq: 6,
      ts: Date.parse(forgedFields.timestamp),
      event_type: 'custom',
      payload: canonicalJson(forgedFields.payload),
      metadata: '{}',
      prev_hash: last.hash,
      hash: hashBytes(chainHash(forgedFields)),
    });
    const result = await expectBrokenAt('past-head-linked', 6, forgedEvent);
    assert.match(result.brokenAt!.reason, /past the session head/);
  });

  test('a second event with an existing seq (a duplicate) breaks the chain, naming both events', async () => {
    const ids = await seed('duplicate-seq');
    const forgedEvent = forgedId(3);
    await insertEventCopy(observe.service.context.database, ids[3]!, { id: forgedEvent });
    const result = await expectBrokenAt('duplicate-seq', 4, forgedEvent);
    assert.match(result.brokenAt!.reason, new RegExp(`${forgedEvent} repeats seq 3 of event ${ids[3]}`));
    assert.equal(result.eventCount, 7);
  });

  test('an event inserted beyond the next seq (a gap) breaks the chain at the missing seq', async () => {
    const ids = await seed('gap-past-head');
    const forgedEvent = forgedId(4);
    await insertEventCopy(observe.service.context.database, ids[5]!, { id: forgedEvent, seq: 8 });
    const result = await expectBrokenAt('gap-past-head', 6, forgedEvent);
    assert.match(result.brokenAt!.reason, new RegExp(`seq 6 is missing: the next stored event, ${forgedEvent}, has seq 8`));
  });

  test('verification reads long sessions in pages: a duplicate of the 1,000th event (same timestamp and seq) across the page boundary is found', async () => {
    const events = Array.from({ length: 1000 }, (_, i) => ({
      sessionId: 'paged',
      agentId: 'agent-paged',
      eventType: 'custom',
      timestamp: at(i),
      payload: { type: 'n', data: i },
    }));
    const acks = await ingestEvents(observe, events);
    assert.equal((await verify('paged')).valid, true);
    const forgedEvent = forgedId(5);
    await insertEventCopy(observe.service.context.database, acks[999]!.id, { id: forgedEvent });
    const result = await expectBrokenAt('paged', 1000, forgedEvent);
    assert.match(result.brokenAt!.reason, new RegExp(`${forgedEvent} repeats seq 999 of event ${acks[999]!.id}`));
    assert.equal(result.eventCount, 1001);
  });

  test('tampering one session leaves the others valid', async () => {
    const result = await verdict('chain-ok');
    assert.equal(result.chainValid, true);
    assert.equal(result.verify.valid, true);
  });

  test('verify of an unknown session is 404 in the error body', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/audit/verify?sessionId=no-such-session' });
    assert.equal(response.statusCode, 404);
    const body = response.json() as ErrorBody;
    assert.equal(body.status, 404);
    assert.equal(typeof body.error, 'string');
  });

  test('verify without sessionId is 400 in the error body', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/audit/verify' });
    assert.equal(response.statusCode, 400);
    const body = response.json() as ErrorBody;
    assert.equal(body.status, 400);
    assert.equal(typeof body.error, 'string');
  });

  test('timeline of an unknown session is 404 in the error body', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/sessions/no-such-session/timeline' });
    assert.equal(response.statusCode, 404);
    assert.equal((response.json() as ErrorBody).status, 404);
  });

  /** Seqs of a session in seq order, its chain verdict and event count, straight from the API. */
  async function chainOf(sessionId: string) {
    const line = await timeline(sessionId);
    const result = await verify(sessionId);
    const session = (await observe.call({ method: 'GET', url: `/api/sessions/${sessionId}` })).json() as { eventCount: number };
    return { events: line.events, chainValid: line.chainValid, verify: result, eventCount: session.eventCount };
  }

  function assertGapless(events: EventOut[], count: number, label: string): void {
    const seqs = events.map((e) => e.seq).sort((a, b) => a - b);
    assert.deepEqual(
      seqs,
      Array.from({ length: count }, (_, i) => i),
      `${label}: seqs 0..${count - 1}, gapless, no duplicates`,
    );
  }

  test('20 concurrent batches of 50 events into the same two sessions: valid, gapless, exact', async () => {
    const sessions = ['conc-a', 'conc-b'];
    const batches = Array.from({ length: 20 }, (_, b) =>
      Array.from({ length: 50 }, (_, j) => ({
        sessionId: sessions[j % 2]!,
        agentId: `agent-${b % 3}`,
        eventType: 'custom',
        payload: { type: 'n', data: { batch: b, index: j } },
      })),
    );
    const responses = await Promise.all(batches.map((events) => observe.call({ method: 'POST', url: '/api/events', payload: { events } })));
    const acknowledged = responses.map((response) => {
      assert.equal(response.statusCode, 201, response.body);
      return (response.json() as { events: { id: string; hash: string }[] }).events;
    });
    for (const sessionId of sessions) {
      const chain = await chainOf(sessionId);
      assert.equal(chain.chainValid, true, `${sessionId} timeline chainValid`);
      assert.equal(chain.verify.valid, true, `${sessionId} verify: ${JSON.stringify(chain.verify.brokenAt)}`);
      assert.equal(chain.verify.eventCount, 500);
      assert.equal(chain.eventCount, 500);
      assert.equal(chain.events.length, 500);
      assertGapless(chain.events, 500, sessionId);
      const bySeq = [...chain.events].sort((a, b) => a.seq - b.seq);
      assert.equal(chain.verify.headHash, bySeq.at(-1)!.hash);
      // Every acknowledged id of this session is stored with the hash it was acknowledged with.
      const stored = new Map(chain.events.map((e) => [e.id, e]));
      const seqOfBatch = new Map<number, number[]>();
      batches.forEach((events, b) =>
        events.forEach((event, j) => {
          if (event.sessionId !== sessionId) return;
          const ack = acknowledged[b]![j]!;
          const found = stored.get(ack.id);
          assert.ok(found, `acknowledged event ${ack.id} is stored`);
          assert.equal(found.hash, ack.hash);
          assert.deepEqual(found.payload, event.payload);
          seqOfBatch.set(b, [...(seqOfBatch.get(b) ?? []), found.seq]);
        }),
      );
      // Within a batch, events of one session keep their input order on the chain.
      for (const [b, seqs] of seqOfBatch) {
        assert.deepEqual(
          seqs,
          [...seqs].sort((x, y) => x - y),
          `batch ${b} order in ${sessionId}`,
        );
      }
    }
  });

  // Two app instances on one PostgreSQL database: the per-session lock must hold across processes.
  if (backend.kind === 'postgres') {
    test('two app instances ingesting concurrently into the same sessions keep one valid, gapless chain', async () => {
      const second = await buildObserveService({ ...observe.config }, { runJobs: false });
      try {
        const callSecond = (events: unknown[]) =>
          second.app.inject({
            method: 'POST',
            url: '/api/events',
            headers: { authorization: `Bearer ${observe.key}` },
            payload: { events },
          });
        const callFirst = (events: unknown[]) => observe.call({ method: 'POST', url: '/api/events', payload: { events } });
        const sessions = ['multi-a', 'multi-b'];
        const batches = Array.from({ length: 24 }, (_, b) =>
          Array.from({ length: 40 }, (_, j) => ({
            sessionId: sessions[(b + j) % 2]!,
            agentId: 'agent-multi',
            eventType: 'custom',
            timestamp: new Date(T0 + b * 1000 + j).toISOString(),
            payload: { type: 'n', data: { batch: b, index: j, via: b % 2 ? 'second' : 'first' } },
          })),
        );
        const responses = await Promise.all(batches.map((events, b) => (b % 2 ? callSecond(events) : callFirst(events))));
        const acknowledged = responses.flatMap((response) => {
          assert.equal(response.statusCode, 201, response.body);
          return (response.json() as { events: { id: string; hash: string }[] }).events;
        });
        assert.equal(acknowledged.length, 24 * 40);

        for (const sessionId of sessions) {
          const chain = await chainOf(sessionId);
          assert.equal(chain.chainValid, true, `${sessionId} timeline chainValid`);
          assert.equal(chain.verify.valid, true, `${sessionId} verify: ${JSON.stringify(chain.verify.brokenAt)}`);
          assert.equal(chain.verify.eventCount, 480);
          assert.equal(chain.eventCount, 480);
          assertGapless(chain.events, 480, sessionId);
          // Both instances give the same verdict.
          const fromSecond = await second.app.inject({
            method: 'GET',
            url: `/api/audit/verify?sessionId=${sessionId}`,
            headers: { authorization: `Bearer ${observe.key}` },
          });
          assert.equal(fromSecond.statusCode, 200);
          assert.equal((fromSecond.json() as VerifyBody).valid, true);
        }
        const rows = await db().selectFrom('events').select(['id', 'hash']).where('session_id', 'in', sessions).execute();
        assert.equal(rows.length, acknowledged.length);
        const storedHashes = new Map(rows.map((r) => [r.id, hashHex(r.hash)]));
        for (const ack of acknowledged) assert.equal(storedHashes.get(ack.id), ack.hash, `acknowledged ${ack.id} stored`);
      } finally {
        await second.app.close();
      }
    });
  }
});
