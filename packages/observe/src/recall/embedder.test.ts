import { decodeVector, encodeVector, isStoredVector, readCodesInto } from '@vigil/platform';
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  CachingEmbedder,
  CachingStoredEmbedder,
  createEmbedder,
  encodedHere,
  embeddingsEndpoint,
  EmbeddingBackendError,
  LocalEmbedder,
  OpenAIEmbedder,
  similarity,
  stem,
  tokenize,
  wordWeight,
} from './embedder.ts';
import { ThreadedLocalEmbedder } from './threaded-embedder.ts';
import { sendJson, TestHttpServer } from '@vigil/platform/testing';
import { describeEvent, eventText, flatten, isEmbeddedEvent, truncate } from './text.ts';
import { contenders, TopK } from './search.ts';
import { TOPICS } from './test-fixtures.ts';
import { quantiseQuery, queryCodeLimit, scanError, simdAvailable, VectorBlock } from './dot-kernel.ts';

const norm = (v: Float32Array): number => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe('LocalEmbedder', () => {
  const embedder = new LocalEmbedder();

  test('is deterministic, 512 dimensions, unit length', async () => {
    const [a, b] = await embedder.embed(['Stripe charge failed: card declined', 'Stripe charge failed: card declined']);
    assert.equal(a!.length, 512);
    assert.equal(embedder.dimensions, 512);
    assert.deepEqual(Array.from(a!), Array.from(b!));
    assert.ok(Math.abs(norm(a!) - 1) < 1e-5);
    // A fresh instance gives the same vector: nothing depends on state or corpus.
    const [c] = await new LocalEmbedder().embed(['Stripe charge failed: card declined']);
    assert.deepEqual(Array.from(c!), Array.from(a!));
    assert.equal(embedder.model, 'vigil-local-hash-512-v1');
  });

  test('empty or symbol-only text is the zero vector (scores 0 against everything)', async () => {
    const [empty, symbols] = await embedder.embed(['', '!!! ---']);
    assert.equal(norm(empty!), 0);
    assert.equal(norm(symbols!), 0);
  });

  test('related texts are closer than unrelated ones', async () => {
    const [query, related, paraphrase, unrelated, other] = await embedder.embed([
      'database migration failed',
      'the database migration failed on step 3 (duplicate column)',
      'migrating the database schema failed',
      'sent the monthly invoice email to the customer',
      'deploy the frontend to production',
    ]);
    const r = similarity(query!, related!);
    const p = similarity(query!, paraphrase!);
    const u = similarity(query!, unrelated!);
    const o = similarity(query!, other!);
    assert.ok(r > 0.5, `related ${r}`);
    assert.ok(p > u && p > o, `paraphrase ${p} vs ${u}, ${o}`);
    assert.ok(u < 0.15 && o < 0.15, `unrelated ${u}, ${o}`);
    assert.ok(similarity(query!, query!) > 0.99999);
  });

  test('stems and character 3-grams match inflections; stop words barely count', async () => {
    const [deploy, deployment, employment, stop1, stop2] = await embedder.embed(['deployed', 'deployments', 'employment', 'the of and to', 'and the to of it']);
    assert.ok(similarity(deploy!, deployment!) > 0.3);
    assert.ok(similarity(deployment!, employment!) < 0.15);
    assert.deepEqual(['migrate', 'migrating', 'migration', 'migrations', 'processes', 'process', 'charges', 'policies'].map(stem), [
      'migrat',
      'migrat',
      'migrat',
      'migrat',
      'process',
      'process',
      'charg',
      'policy',
    ]);
    const [a, b] = await embedder.embed(['the billing invoice', 'a billing invoice']);
    assert.ok(similarity(a!, b!) > 0.95, 'stop words change little');
    assert.ok(norm(stop1!) > 0 && norm(stop2!) > 0);
  });

  test('tokenize splits identifiers; weights favour long words over stop words and ids', () => {
    assert.deepEqual(tokenize('sendEmail web_search HTTPServer v2'), ['send', 'email', 'web', 'search', 'httpserver', 'v2']);
    assert.ok(wordWeight('the') < wordWeight('db'));
    assert.ok(wordWeight('db') < wordWeight('migration'));
    assert.equal(wordWeight('12345'), 0.3);
    assert.equal(wordWeight('01hf3k9z2x8c7v6b5n4m'), 0.3);
  });

  test('vectors are stored as int8 codes with a Float32 scale, each value within half a step; a short text in the sparse layout', async () => {
    const [long, short] = await embedder.embed([TOPICS.join(' '), 'round trip of a short text']);
    for (const [vector, layout] of [
      [long!, 'dense'],
      [short!, 'sparse'],
    ] as const) {
      const stored = encodeVector(vector);
      const max = Math.max(...Array.from(vector, Math.abs));
      assert.equal(stored.readFloatLE(0), Math.fround(max / 127), 'scale = max |value| / 127, little-endian');
      const nonZero = Array.from(vector).filter((v) => Math.round(v / stored.readFloatLE(0)) !== 0).length;
      assert.equal(stored.byteLength, layout === 'dense' ? 4 + 512 : 4 + 64 + nonZero, layout);
      assert.ok(isStoredVector(stored, 512));
      const decoded = decodeVector(stored, 512);
      for (let i = 0; i < 512; i++) assert.ok(Math.abs(decoded[i]! - vector[i]!) <= stored.readFloatLE(0) / 2 + 1e-9, `${layout} dimension ${i}`);
    }
    const zero = encodeVector(new Float32Array(512));
    assert.deepEqual(Array.from(decodeVector(zero, 512)), new Array(512).fill(0), 'a zero vector stays zero');
    assert.equal(isStoredVector(new Uint8Array(512 * 4), 512), false, 'a Float32 vector is not one');
  });

  test('int8 cosines stay within 0.005 of the exact ones', async () => {
    const texts = TOPICS.slice(0, 20);
    const vectors = await embedder.embed(texts);
    const [query] = await embedder.embed(['deploy the billing service after the database migration']);
    for (const vector of vectors) assert.ok(Math.abs(similarity(query!, decodeVector(encodeVector(vector), 512)) - similarity(query!, vector)) < 0.005);
  });
});

describe('event texts', () => {
  test('types with text are embedded; machine output and numbers are not', () => {
    assert.equal(isEmbeddedEvent('tool_call', {}), true);
    assert.equal(isEmbeddedEvent('tool_response', {}), false);
    assert.equal(isEmbeddedEvent('cost_tracked', {}), false);
    assert.equal(isEmbeddedEvent('session_ended', { reason: 'completed' }), false);
    assert.equal(isEmbeddedEvent('session_ended', { reason: 'completed', summary: 'done' }), true);
    assert.equal(isEmbeddedEvent('approval_granted', { action: 'deploy', decidedBy: 'api:ops' }), false, 'a decision without a reason');
    assert.equal(isEmbeddedEvent('approval_denied', { action: 'deploy', decidedBy: 'api:ops', reason: 'too risky on a Friday' }), true);
    assert.equal(isEmbeddedEvent('llm_response', { model: 'm', completion: '', toolCalls: [{ name: 'search' }] }), false, 'an answer of tool calls only');
    assert.equal(isEmbeddedEvent('llm_response', { model: 'm', completion: [{ type: 'text', text: 'Done.' }] }), true);
    assert.equal(
      eventText('tool_call', { toolName: 'send_email', callId: 'c1', arguments: { to: 'ops@acme.com', subject: 'Outage' } }),
      'tool_call send_email: to: ops@acme.com, subject: Outage',
    );
    assert.equal(
      eventText('llm_call', {
        model: 'gpt-4o',
        messages: [
          { role: 'user', content: 'first' },
          { role: 'assistant', content: 'x' },
          { role: 'user', content: [{ type: 'text', text: 'second' }] },
        ],
      }),
      'llm_call gpt-4o: second',
    );
    assert.equal(eventText('tool_response', { toolName: 'x', result: 1 }), null);
    // Whitespace runs, tabs, newlines and other spaces become one space; single spaces stay; the ends are trimmed.
    for (const [subject, expected] of [
      ['two  spaces', 'two spaces'],
      ['tab\there', 'tab here'],
      ['line\nbreak \r\n end', 'line break end'],
      ['no\u00a0break', 'no break'],
      ['plain words only', 'plain words only'],
    ] as const) {
      assert.equal(eventText('tool_call', { toolName: 'mail', arguments: { subject: `${subject} ` } }), `tool_call mail: subject: ${expected}`, subject);
    }
    const loop = {
      model: 'm',
      messages: [
        { role: 'user', content: 'book a flight' },
        { role: 'assistant', content: '' },
        { role: 'tool', content: '{}' },
      ],
    };
    assert.equal(isEmbeddedEvent('llm_call', loop), false, 'a tool-loop call repeats the user request');
    assert.equal(isEmbeddedEvent('llm_call', { model: 'm', messages: [] }), false);
    assert.match(describeEvent('tool_response', { toolName: 'x', result: { ok: true } }), /tool_response x: ok: true/);
  });

  test('flatten bounds nesting and size; truncate never splits a surrogate pair', () => {
    assert.equal(flatten({ a: { b: { c: { d: { e: 'deep' } } } } }), '');
    assert.ok(flatten({ text: 'x'.repeat(5000) }).length <= 2010);
    const cut = truncate(`${'a'.repeat(8)}😀😀`, 10);
    assert.equal(cut.length, 9);
    assert.ok(cut.endsWith('…'));
    assert.equal(truncate('short', 10), 'short');
  });
});

test('the int8 dot-product kernel (WebAssembly SIMD) and its JavaScript fallback give the same sums as a plain loop, without overflow', () => {
  assert.equal(simdAvailable(), true, 'Node 20 has WebAssembly SIMD');
  for (const dims of [4, 6, 12, 64, 512, 1536]) {
    const simd = new VectorBlock(dims, 64);
    const plain = new VectorBlock(dims, 64, false);
    assert.equal(simd.stride % 16, 0, 'rows are padded to a multiple of 16');
    for (let row = 0; row < 64; row++) {
      for (let d = 0; d < dims; d++) {
        // Row 0: the largest magnitudes with alternating signs, against an alternating query (the widest sum).
        const code = row === 0 ? (d % 2 === 0 ? -128 : 127) : Math.round(127 * Math.sin(row * 31 + d * 0.37));
        simd.codes[row * simd.stride + d] = code;
        plain.codes[row * plain.stride + d] = code;
      }
    }
    for (const query of [new Float32Array(dims).map((_, d) => (d % 2 === 0 ? -1 : 1)), new Float32Array(dims).map((_, d) => Math.cos(d * 0.11))]) {
      const codes = quantiseQuery(query);
      assert.ok(Math.max(...Array.from(codes.codes, Math.abs)) <= queryCodeLimit(dims));
      const a = Array.from(simd.dots(codes, 50).subarray(0, 50));
      const b = Array.from(plain.dots(codes, 50).subarray(0, 50));
      assert.deepEqual(a, b, `dims ${dims}: SIMD and JavaScript agree to the bit`);
      for (let row = 0; row < 50; row++) {
        let expected = 0;
        for (let d = 0; d < dims; d++) expected += simd.codes[row * simd.stride + d]! * codes.codes[d]!;
        assert.equal(a[row], expected, `dims ${dims} row ${row}`);
      }
    }
  }
});

test('the i16 query: each value within half a step; the scan error bound holds for stored vectors', async () => {
  const embedder = new LocalEmbedder();
  const [query] = await embedder.embed(['deploy the billing service after the database migration']);
  const codes = quantiseQuery(query!);
  assert.equal(queryCodeLimit(512), 32767);
  assert.equal(queryCodeLimit(1536), 10922);
  let l1 = 0;
  let rounding = 0;
  for (let d = 0; d < 512; d++) {
    const value = codes.codes[d]! * codes.scale;
    assert.ok(Math.abs(value - query![d]!) <= codes.scale / 2 + 1e-12, `dimension ${d}`);
    l1 += Math.abs(value);
    rounding += (value - query![d]!) ** 2;
  }
  assert.ok(Math.abs(codes.l1 - l1) < 1e-9 && Math.abs(codes.rounding - Math.sqrt(rounding)) < 1e-12);
  assert.ok(codes.rounding < 1e-4, `the query's own rounding is small: ${codes.rounding}`);
  const vectors = await embedder.embed([...TOPICS, 'a', TOPICS.join(' ')]);
  const block = new VectorBlock(512, vectors.length);
  vectors.forEach((vector, row) => (block.scales[row] = readCodesInto(encodeVector(vector), 512, block.codes, row * block.stride)));
  const sums = block.dots(codes, vectors.length);
  let bounds = 0;
  vectors.forEach((vector, row) => {
    const scanned = sums[row]! * codes.scale * block.scales[row]!;
    const error = scanError(codes, block.scales[row]!);
    const exact = vector.reduce((sum, v, d) => sum + v * query![d]!, 0);
    assert.ok(Math.abs(scanned - exact) <= error, `row ${row}: ${scanned} vs ${exact} ± ${error}`);
    if (row < TOPICS.length) bounds += error;
  });
  assert.ok(bounds / TOPICS.length < 0.01, `the bound stays narrow on texts of a sentence (mean ${bounds / TOPICS.length})`);
});

test('contenders: every candidate whose upper bound reaches the wanted-th best lower bound, the rest left out', () => {
  // [upper, lower]: best first by upper bound.
  const candidates = (
    [
      [0.9, 0.88],
      [0.85, 0.8],
      [0.83, 0.81],
      [0.81, -Infinity],
      [0.8, 0.79],
      [0.79, 0.78],
    ] as const
  ).map(([upper, lower], item) => ({ score: upper, item: { item, lower } }));
  const kept = (wanted: number): number[] => contenders(candidates, wanted, (c) => c.lower).map((c) => c.item.item);
  // Two wanted: the lower bounds 0.88 and 0.81 guarantee two candidates at 0.81 or above; 0.8 and 0.79 cannot reach it.
  assert.deepEqual(kept(2), [0, 1, 2, 3]);
  assert.deepEqual(kept(1), [0], 'nothing else reaches 0.88');
  assert.deepEqual(kept(3), [0, 1, 2, 3, 4], 'the third lower bound is 0.8 (one that may fail a threshold does not count)');
  assert.deepEqual(kept(6), [0, 1, 2, 3, 4, 5], 'no more candidates than wanted: all of them');
});

test('TopK keeps the k best, best first, with the tie-break', () => {
  const top = new TopK<number>(3, (a, b) => a < b);
  for (const [score, item] of [
    [0.1, 1],
    [0.9, 2],
    [0.5, 3],
    [0.9, 0],
    [0.7, 4],
    [0.2, 5],
  ] as const)
    top.push(score, item);
  assert.deepEqual(
    top.sorted().map((e) => [e.score, e.item]),
    [
      [0.9, 0],
      [0.9, 2],
      [0.7, 4],
    ],
  );
});

describe('OpenAIEmbedder against a local HTTP server', () => {
  const local = new LocalEmbedder(64);
  let server: TestHttpServer;
  let mode: 'ok' | 'error' | 'hang' | 'short' | 'bad' | 'badRequest' = 'ok';

  before(async () => {
    server = await new TestHttpServer((request, res) => {
      if (mode === 'hang') return;
      if (mode === 'error') return sendJson(res, 500, { error: { message: 'overloaded' } });
      if (mode === 'badRequest') return sendJson(res, 400, { error: { message: 'input too long' } });
      const { input } = JSON.parse(request.body) as { input: string[] };
      if (mode === 'bad') return sendJson(res, 200, { data: input.map((_, index) => ({ index, embedding: ['x'] })) });
      const data = input.map((text, index) => ({ object: 'embedding', index, embedding: Array.from(local.embedOne(text)).map((x) => x * 3) }));
      if (mode === 'short') data.pop();
      // Out of order on purpose: `index` decides.
      sendJson(res, 200, { object: 'list', model: 'test-embed', data: data.reverse() });
    }).start();
  });
  beforeEach(() => {
    server.requests.length = 0;
    mode = 'ok';
  });
  after(() => server.stop());

  test('the endpoint is EMBEDDINGS_URL + /v1/embeddings (a trailing /v1 is not doubled)', () => {
    assert.equal(embeddingsEndpoint('http://h:1'), 'http://h:1/v1/embeddings');
    assert.equal(embeddingsEndpoint('http://h:1/v1/'), 'http://h:1/v1/embeddings');
    assert.equal(embeddingsEndpoint('http://h:1/proxy'), 'http://h:1/proxy/v1/embeddings');
    assert.ok(createEmbedder({ model: 'm', timeoutMs: 1 }).inner instanceof LocalEmbedder);
    assert.ok(createEmbedder({ url: 'http://h', model: 'm', timeoutMs: 1 }).inner instanceof OpenAIEmbedder);
  });

  test('POSTs {model, input} in batches with the bearer key; vectors come back in input order, normalised', async () => {
    const embedder = new OpenAIEmbedder({ url: server.url, model: 'test-embed', apiKey: 'sk-test', timeoutMs: 2000, batchSize: 4 });
    assert.equal(embedder.dimensions, 0);
    const texts = Array.from({ length: 10 }, (_, i) => `text number ${i} about topic ${i % 3}`);
    const vectors = await embedder.embed(texts);
    assert.equal(vectors.length, 10);
    assert.equal(embedder.dimensions, 64);
    assert.deepEqual(
      server.requests.map((r) => (JSON.parse(r.body) as { input: string[] }).input.length),
      [4, 4, 2],
    );
    for (const request of server.requests) {
      assert.equal(request.method, 'POST');
      assert.equal(request.url, '/v1/embeddings');
      assert.equal(request.headers.authorization, 'Bearer sk-test');
      assert.match(String(request.headers['content-type']), /application\/json/);
      assert.equal((JSON.parse(request.body) as { model: string }).model, 'test-embed');
    }
    vectors.forEach((v, i) => {
      assert.ok(Math.abs(norm(v) - 1) < 1e-5);
      assert.ok(similarity(v, local.embedOne(texts[i]!)) > 0.9999, `vector ${i} is the one of its input`);
    });
  });

  test('CachingEmbedder sends each distinct text once and keeps the most recent ones', async () => {
    const cached = new CachingEmbedder(new OpenAIEmbedder({ url: server.url, model: 'm', timeoutMs: 2000 }), 2);
    const first = await cached.embed(['a', 'b', 'a']);
    assert.deepEqual(
      server.requests.map((r) => (JSON.parse(r.body) as { input: string[] }).input),
      [['a', 'b']],
    );
    assert.equal(first[0], first[2]);
    const again = await cached.embed(['b', 'a', 'c']);
    assert.equal(again[0], first[1]);
    assert.deepEqual((JSON.parse(server.requests[1]!.body) as { input: string[] }).input, ['c']);
    await cached.embed(['b']);
    assert.equal(server.requests.length, 3, 'b was the least recently used of a, b, c with room for two');
    assert.equal(cached.model, 'm');
    assert.equal(cached.dimensions, 64);
  });

  test('stored vectors from a remote backend, as the drain writes them: encoded, each distinct text sent once, recent ones kept', async () => {
    const remote = new OpenAIEmbedder({ url: server.url, model: 'm', timeoutMs: 2000 });
    const stored = new CachingStoredEmbedder(encodedHere(remote), 2);
    const first = await stored.embedStored(['a', 'b', 'a']);
    assert.deepEqual(
      server.requests.map((r) => (JSON.parse(r.body) as { input: string[] }).input),
      [['a', 'b']],
    );
    const [a, b] = await remote.embed(['a', 'b']);
    assert.deepEqual(
      first,
      [a!, b!, a!].map((vector) => ({ dims: 64, vector: encodeVector(vector) })),
      'each vector stored with its own length',
    );
    assert.equal(stored.model, 'm');
    assert.equal(stored.dimensions, 64);
    await stored.embedStored(['b', 'c']);
    assert.deepEqual((JSON.parse(server.requests[2]!.body) as { input: string[] }).input, ['c'], 'b was kept');
  });

  test('no key: no Authorization header', async () => {
    await new OpenAIEmbedder({ url: server.url, model: 'm', timeoutMs: 2000 }).embed(['x']);
    assert.equal(server.requests[0]!.headers.authorization, undefined);
  });

  test('5xx, timeouts, malformed or short answers are EmbeddingBackendError; 4xx is not retryable', async () => {
    const embedder = new OpenAIEmbedder({ url: server.url, model: 'm', timeoutMs: 300 });
    for (const failing of ['error', 'hang', 'short', 'bad'] as const) {
      mode = failing;
      await assert.rejects(embedder.embed(['a', 'b']), (error: unknown) => error instanceof EmbeddingBackendError && error.retryable, failing);
    }
    mode = 'badRequest';
    await assert.rejects(embedder.embed(['a']), (error: unknown) => error instanceof EmbeddingBackendError && !error.retryable);
    const unreachable = new OpenAIEmbedder({ url: 'http://127.0.0.1:1', model: 'm', timeoutMs: 300 });
    await assert.rejects(unreachable.embed(['a']), EmbeddingBackendError);
  });
});

describe('ThreadedLocalEmbedder', () => {
  test('embeds on its worker thread the very vectors of LocalEmbedder, encoded as stored, concurrent callers queued; closed, it refuses', async () => {
    const threaded = new ThreadedLocalEmbedder();
    const local = new LocalEmbedder();
    try {
      assert.equal(threaded.model, local.model);
      assert.equal(threaded.dimensions, local.dimensions);
      // A long text's vector is dense, a short one's sparse: both layouts cross the thread.
      const texts = [...TOPICS, TOPICS.join(' ').repeat(4)];
      const batches = Array.from({ length: 6 }, (_, b) => texts.slice(b * 10, b * 10 + 10));
      const answers = await Promise.all(batches.map((batch) => threaded.embedStored(batch)));
      const lengths = new Set<number>();
      answers.forEach((vectors, b) => {
        assert.equal(vectors.length, batches[b]!.length);
        vectors.forEach(({ dims, vector }, i) => {
          assert.ok(Buffer.isBuffer(vector));
          assert.deepEqual(vector, encodeVector(local.embedOne(batches[b]![i]!)));
          assert.equal(dims, local.dimensions);
          lengths.add(vector.length);
        });
      });
      assert.ok(lengths.has(4 + local.dimensions) && lengths.size > 1, 'dense and sparse vectors');
    } finally {
      await threaded.close();
    }
    await assert.rejects(threaded.embedStored(['after close']), (error: Error) => error instanceof EmbeddingBackendError && error.retryable);
  });
});
