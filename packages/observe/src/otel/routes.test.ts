// POST /v1/traces over HTTP: encodings, compression, authentication, partial success, dedup of
// resends (also concurrent ones) and all-or-nothing storage.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import protobuf from 'protobufjs';
import { startTestObserve, type TestObserve } from '../testing.ts';

// The official messages, to build protobuf bodies and read protobuf answers as an exporter would.
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => join(fileURLToPath(new URL('./proto/', import.meta.url)), target);
root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
const RequestType = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
const ResponseType = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');

const START = 1_795_600_000_000_000_000n;
const attribute = (key: string, value: string | number) => ({ key, value: typeof value === 'string' ? { stringValue: value } : { intValue: value } });

interface JsonSpan {
  traceId: string;
  spanId: string;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: ReturnType<typeof attribute>[];
  parentSpanId?: string;
}

const traceHex = (n: number) => n.toString(16).padStart(32, '0');
const spanHex = (n: number) => n.toString(16).padStart(16, '0');

/** A chat span of conversation `conversation` (1,000 input and 100 output tokens of gpt-4o-mini). */
function chatSpan(trace: number, span: number, conversation: string): JsonSpan {
  return {
    traceId: traceHex(trace),
    spanId: spanHex(span),
    name: 'chat gpt-4o-mini',
    startTimeUnixNano: String(START + BigInt(span) * 1_000_000n),
    endTimeUnixNano: String(START + BigInt(span) * 1_000_000n + 250_000_000n),
    attributes: [
      attribute('gen_ai.operation.name', 'chat'),
      attribute('gen_ai.provider.name', 'openai'),
      attribute('gen_ai.request.model', 'gpt-4o-mini'),
      attribute('gen_ai.usage.input_tokens', 1000),
      attribute('gen_ai.usage.output_tokens', 100),
      attribute('gen_ai.conversation.id', conversation),
    ],
  };
}

const jsonRequest = (spans: JsonSpan[], serviceName = 'otel-test') => ({
  resourceSpans: [{ resource: { attributes: [attribute('service.name', serviceName)] }, scopeSpans: [{ scope: { name: 'test' }, spans }] }],
});

/** The same request in protobuf: ids as bytes. */
function protobufRequest(spans: JsonSpan[]): Buffer {
  const request = jsonRequest(spans);
  for (const span of request.resourceSpans[0]!.scopeSpans[0]!.spans as unknown as Record<string, unknown>[]) {
    for (const field of ['traceId', 'spanId', 'parentSpanId']) {
      if (typeof span[field] === 'string') span[field] = Buffer.from(span[field] as string, 'hex');
    }
  }
  return Buffer.from(RequestType.encode(RequestType.fromObject(request)).finish());
}

await describeEachDatabase('POST /v1/traces', (backend) => {
  let observe: TestObserve;
  let ingestKey: string;
  let readKey: string;

  before(async () => {
    observe = await startTestObserve(backend);
    for (const scope of ['ingest', 'read']) {
      const created = await observe.call({ method: 'POST', url: '/api/keys', payload: { name: `only-${scope}`, scopes: [scope] } });
      assert.equal(created.statusCode, 201, created.body);
      if (scope === 'ingest') ingestKey = (created.json() as { key: string }).key;
      else readKey = (created.json() as { key: string }).key;
    }
  });
  after(() => observe.close());

  const post = (body: string | Buffer, headers: Record<string, string>, key: string | null = ingestKey) =>
    observe.service.app.inject({
      method: 'POST',
      url: '/v1/traces',
      payload: body,
      headers: { ...(key !== null && { authorization: `Bearer ${key}` }), ...headers },
    });
  const postJson = (request: unknown, headers: Record<string, string> = {}) =>
    post(JSON.stringify(request), { 'content-type': 'application/json', ...headers });
  const eventCount = async (sessionId: string): Promise<number> =>
    (await observe.call({ method: 'GET', url: `/api/events?sessionId=${sessionId}&limit=1` })).json().total as number;

  test('protobuf in, protobuf out; gzip or not; the answer is an empty ExportTraceServiceResponse when every span is stored', async () => {
    for (const [n, gzip] of [
      [1, false],
      [2, true],
    ] as const) {
      const body = protobufRequest([chatSpan(100 + n, 1, `conv-pb-${n}`)]);
      const response = await post(gzip ? gzipSync(body) : body, { 'content-type': 'application/x-protobuf', ...(gzip && { 'content-encoding': 'gzip' }) });
      assert.equal(response.statusCode, 200, response.body);
      assert.match(String(response.headers['content-type']), /^application\/x-protobuf/);
      assert.deepEqual(ResponseType.toObject(ResponseType.decode(response.rawPayload)), {});
      assert.equal(await eventCount(`conv-pb-${n}`), 2);
    }
  });

  test('JSON in, JSON out, gzip or not', async () => {
    const plain = await postJson(jsonRequest([chatSpan(110, 1, 'conv-json-1')]));
    assert.equal(plain.statusCode, 200, plain.body);
    assert.deepEqual(plain.json(), {});
    const gzipped = await post(gzipSync(JSON.stringify(jsonRequest([chatSpan(111, 1, 'conv-json-2')]))), {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
    });
    assert.equal(gzipped.statusCode, 200, gzipped.body);
    assert.equal(await eventCount('conv-json-2'), 2);
  });

  test('refused spans are counted in partialSuccess, in the encoding of the request, and the others are stored', async () => {
    const badIds = { ...chatSpan(120, 2, 'conv-partial'), traceId: 'not-hex' };
    const endsBeforeStart = { ...chatSpan(120, 3, 'conv-partial'), endTimeUnixNano: '1' };
    const hugeTokens = {
      ...chatSpan(120, 4, 'conv-partial'),
      attributes: [
        ...chatSpan(120, 4, 'conv-partial').attributes.slice(0, 3),
        attribute('gen_ai.usage.input_tokens', 1e15),
        attribute('gen_ai.conversation.id', 'conv-partial'),
      ],
    };
    const response = await postJson(jsonRequest([chatSpan(120, 1, 'conv-partial'), badIds, endsBeforeStart, hugeTokens]));
    assert.equal(response.statusCode, 200, response.body);
    const { partialSuccess } = response.json() as { partialSuccess: { rejectedSpans: string; errorMessage: string } };
    assert.equal(partialSuccess.rejectedSpans, '3');
    assert.match(partialSuccess.errorMessage, /span 0000000000000002: traceId must be 16 bytes/);
    assert.match(partialSuccess.errorMessage, /span 0000000000000003: endTimeUnixNano is before startTimeUnixNano/);
    assert.match(partialSuccess.errorMessage, /span 0000000000000004: llm_response\.usage\.inputTokens/);
    assert.equal(await eventCount('conv-partial'), 2, 'the good span is stored');

    const protobufAnswer = await post(
      protobufRequest([chatSpan(121, 1, 'conv-partial-pb'), { ...chatSpan(121, 2, 'conv-partial-pb'), endTimeUnixNano: '1' }]),
      { 'content-type': 'application/x-protobuf' },
    );
    assert.equal(protobufAnswer.statusCode, 200);
    const decoded = ResponseType.toObject(ResponseType.decode(protobufAnswer.rawPayload), { longs: Number }) as {
      partialSuccess: { rejectedSpans: number; errorMessage: string };
    };
    assert.equal(decoded.partialSuccess.rejectedSpans, 1);
    assert.match(decoded.partialSuccess.errorMessage, /endTimeUnixNano/);
  });

  test('a span sent again, alone, in a bigger batch or concurrently, is stored once; the chain stays valid', async () => {
    const spans = [chatSpan(130, 1, 'conv-dedup'), chatSpan(130, 2, 'conv-dedup')];
    assert.equal((await postJson(jsonRequest(spans))).statusCode, 200);
    assert.equal((await postJson(jsonRequest(spans))).statusCode, 200);
    assert.equal((await post(protobufRequest([...spans, chatSpan(130, 3, 'conv-dedup')]), { 'content-type': 'application/x-protobuf' })).statusCode, 200);
    assert.equal(await eventCount('conv-dedup'), 6, 'three spans, two events each');
    // Twice the same span in one request is one span.
    assert.equal((await postJson(jsonRequest([chatSpan(131, 1, 'conv-dedup-2'), chatSpan(131, 1, 'conv-dedup-2')]))).statusCode, 200);
    assert.equal(await eventCount('conv-dedup-2'), 2);
    // Concurrent resends (an exporter retrying while the first attempt is still in flight).
    const racing = jsonRequest(Array.from({ length: 50 }, (_, i) => chatSpan(132, i + 1, 'conv-race')));
    const answers = await Promise.all(Array.from({ length: 6 }, () => postJson(racing)));
    for (const answer of answers) assert.equal(answer.statusCode, 200, answer.body);
    assert.equal(await eventCount('conv-race'), 100);
    const verify = (await observe.call({ method: 'GET', url: '/api/audit/verify?sessionId=conv-race' })).json() as { valid: boolean; eventCount: number };
    assert.deepEqual([verify.valid, verify.eventCount], [true, 100]);
  });

  test('spans without a session of their own join the session named by their trace, in the request or stored before', async () => {
    const named = chatSpan(140, 1, 'conv-trace');
    const child = {
      ...chatSpan(140, 2, 'x'),
      parentSpanId: spanHex(1),
      attributes: chatSpan(140, 2, 'x').attributes.filter((a) => a.key !== 'gen_ai.conversation.id'),
    };
    assert.equal((await postJson(jsonRequest([child, named]))).statusCode, 200);
    const later = { ...child, spanId: spanHex(3) };
    assert.equal((await postJson(jsonRequest([later]))).statusCode, 200);
    assert.equal(await eventCount('conv-trace'), 6);
    const orphan = { ...later, traceId: traceHex(141) };
    assert.equal((await postJson(jsonRequest([orphan]))).statusCode, 200);
    assert.equal(await eventCount(traceHex(141)), 2, 'no session anywhere: the trace id');
    const agent = (await observe.call({ method: 'GET', url: `/api/events?sessionId=${traceHex(141)}&limit=1` })).json().events[0].agentId;
    assert.equal(agent, 'otel-test', 'the resource service.name');
  });

  test('401 without a key, 403 with a read-only key, and nothing stored', async () => {
    const body = JSON.stringify(jsonRequest([chatSpan(150, 1, 'conv-auth')]));
    const anonymous = await post(body, { 'content-type': 'application/json' }, null);
    assert.equal(anonymous.statusCode, 401, anonymous.body);
    const reader = await post(body, { 'content-type': 'application/json' }, readKey);
    assert.equal(reader.statusCode, 403, reader.body);
    assert.match((reader.json() as { error: string }).error, /ingest/);
    assert.equal(await eventCount('conv-auth'), 0);
  });

  test('415 for another content type or encoding, 400 for an undecodable body, 413 past the body limit once gunzipped', async () => {
    const body = JSON.stringify(jsonRequest([chatSpan(160, 1, 'conv-bad')]));
    for (const headers of [{ 'content-type': 'text/plain' }, { 'content-type': 'application/json', 'content-encoding': 'br' }] as Record<string, string>[]) {
      const response = await post(body, headers);
      assert.equal(response.statusCode, 415, response.body);
      assert.match((response.json() as { error: string }).error, /application\/x-protobuf/);
    }
    const cases: [string | Buffer, Record<string, string>][] = [
      [Buffer.from([0x0a, 0xff, 0xff, 0xff]), { 'content-type': 'application/x-protobuf' }],
      ['{"resourceSpans": [', { 'content-type': 'application/json' }],
      ['{"resourceSpans": "nope"}', { 'content-type': 'application/json' }],
      [Buffer.from('not gzip at all'), { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' }],
    ];
    for (const [payload, headers] of cases) {
      const response = await post(payload, headers);
      assert.equal(response.statusCode, 400, `${JSON.stringify(headers)}: ${response.body}`);
      assert.deepEqual(Object.keys(response.json() as object).sort(), ['code', 'error', 'status']);
    }
    const bomb = gzipSync(Buffer.alloc(observe.config.bodyLimitBytes + 1, 0x20));
    const tooLarge = await post(bomb, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    assert.equal(tooLarge.statusCode, 413, tooLarge.body);
    assert.equal(await eventCount('conv-bad'), 0);
  });

  test('retention removes the spans of the sessions it deletes: the same span sent afterwards is stored anew', async () => {
    const old = { ...chatSpan(170, 1, 'conv-old'), startTimeUnixNano: '1767225600000000000', endTimeUnixNano: '1767225601000000000' }; // 2026-01-01
    assert.equal((await postJson(jsonRequest([old]))).statusCode, 200);
    assert.equal((await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 30 } })).statusCode, 200);
    await observe.service.jobs.retention.tick();
    assert.equal(await eventCount('conv-old'), 0);
    const rows = await observe.service.context.database.db.selectFrom('otel_spans').select('span_id').where('session_id', '=', 'conv-old').execute();
    assert.deepEqual(rows, []);
    assert.equal((await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 0 } })).statusCode, 200);
    assert.equal((await postJson(jsonRequest([old]))).statusCode, 200);
    assert.equal(await eventCount('conv-old'), 2);
  });

  test('an empty protobuf request is a valid request with nothing in it', async () => {
    const response = await post(Buffer.alloc(0), { 'content-type': 'application/x-protobuf' });
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.rawPayload.length, 0);
  });
});
