/**
 * `npm run bench` (part): OTLP/HTTP trace ingest against native event ingest on the same observe
 * server (separate process, SQLite unless DATABASE_URL is set) and the same run. OTLP posts
 * 1,000-span protobuf batches of GenAI chat spans (each span is an llm_call and an llm_response
 * event); native posts the same two events per call as 1,000-event JSON batches to POST /api/events.
 * The two alternate in rounds so that both see the same database sizes; the result is events
 * stored per second, and the OTLP share of the native rate (the target is at least 70 %).
 *
 * BENCH_OTLP_SPANS (default 200,000) sets the spans sent; native sends twice as many events.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { createObserveKey, startObserve, stopServer } from './server.ts';
import { CLIENTS } from './observe-workload.ts';
import { checked, printTable, rate, type Row } from './table.ts';

const TOTAL_SPANS = Number(process.env.BENCH_OTLP_SPANS ?? 200_000);
const SPANS_PER_BATCH = 1000;
const EVENTS_PER_BATCH = 1000;
const ROUNDS = 4;
const SPANS_PER_TRACE = 4;

// The official OTLP messages (observe's copy), to encode what an exporter would send.
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => join(fileURLToPath(new URL('../packages/observe/src/otel/proto/', import.meta.url)), target);
root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
const RequestType = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');

const text = (key: string, value: string) => ({ key, value: { stringValue: value } });
const int = (key: string, value: number) => ({ key, value: { intValue: value } });
const MESSAGES = JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'Summarise the quarterly revenue report in three bullet points.' }] }]);
const OUTPUT = JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: 'Revenue grew 12% on cloud services.' }], finish_reason: 'stop' }]);

/** Batch `b`: SPANS_PER_BATCH chat spans, SPANS_PER_TRACE per trace and conversation, ids unique in the run. */
function otlpBatch(b: number, startMs: number): Blob {
  const spans = Array.from({ length: SPANS_PER_BATCH }, (_, i) => {
    const n = b * SPANS_PER_BATCH + i;
    const trace = Math.floor(n / SPANS_PER_TRACE) + 1;
    const start = BigInt(startMs + i) * 1_000_000n;
    return {
      traceId: Buffer.from(trace.toString(16).padStart(32, '0'), 'hex'),
      spanId: Buffer.from((n + 1).toString(16).padStart(16, '0'), 'hex'),
      name: 'chat gpt-4o-mini',
      kind: 3,
      startTimeUnixNano: start.toString(),
      endTimeUnixNano: (start + 850_000_000n).toString(),
      attributes: [
        text('gen_ai.operation.name', 'chat'),
        text('gen_ai.provider.name', 'openai'),
        text('gen_ai.request.model', 'gpt-4o-mini'),
        text('gen_ai.response.model', 'gpt-4o-mini'),
        int('gen_ai.usage.input_tokens', 420),
        int('gen_ai.usage.output_tokens', 96),
        text('gen_ai.conversation.id', `otlp-${trace}`),
        text('gen_ai.input.messages', MESSAGES),
        text('gen_ai.output.messages', OUTPUT),
      ],
      status: { code: 1 },
    };
  });
  const request = {
    resourceSpans: [{ resource: { attributes: [text('service.name', `agent-${b % 7}`)] }, scopeSpans: [{ scope: { name: 'bench' }, spans }] }],
  };
  return new Blob([RequestType.encode(RequestType.fromObject(request)).finish() as Uint8Array<ArrayBuffer>]);
}

/** Batch `b` of native events: the same calls as llm_call + llm_response pairs, 4 calls per session. */
function nativeBatch(b: number, startMs: number): string {
  const events = [];
  for (let i = 0; i < EVENTS_PER_BATCH / 2; i++) {
    const n = b * (EVENTS_PER_BATCH / 2) + i;
    const sessionId = `native-${Math.floor(n / SPANS_PER_TRACE)}`;
    const agentId = `agent-${b % 7}`;
    const callId = `l${n}`;
    events.push(
      {
        sessionId,
        agentId,
        eventType: 'llm_call',
        timestamp: new Date(startMs + i).toISOString(),
        payload: {
          callId,
          provider: 'openai',
          model: 'gpt-4o-mini',
          messages: [{ role: 'user', content: 'Summarise the quarterly revenue report in three bullet points.' }],
        },
      },
      {
        sessionId,
        agentId,
        eventType: 'llm_response',
        timestamp: new Date(startMs + i + 850).toISOString(),
        payload: {
          callId,
          provider: 'openai',
          model: 'gpt-4o-mini',
          completion: 'Revenue grew 12% on cloud services.',
          finishReason: 'stop',
          usage: { inputTokens: 420, outputTokens: 96, totalTokens: 516 },
          costUsd: 0.0001206,
          latencyMs: 850,
        },
      },
    );
  }
  return JSON.stringify({ events });
}

/** Posts the bodies from CLIENTS concurrent clients; answers the seconds taken. */
async function send(bodies: (() => { url: string; body: Blob | string; type: string; ok: number })[]): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < bodies.length) {
        const { url, body, type, ok } = bodies[next++]!();
        const response = await fetch(url, { method: 'POST', headers: { 'content-type': type, authorization: `Bearer ${key}` }, body });
        const answer = new Uint8Array(await response.arrayBuffer());
        if (response.status !== ok) throw new Error(`${url}: ${response.status} ${Buffer.from(answer).toString()}`);
        // A partial success would mean spans were refused: the run would not measure what it says.
        if (type === 'application/x-protobuf' && answer.length > 0) throw new Error(`${url}: partial success ${Buffer.from(answer).toString('latin1')}`);
      }
    }),
  );
  return (performance.now() - started) / 1000;
}

let key = '';

async function main(): Promise<void> {
  const { child, base, dataDir, schema } = await startObserve('otlp');
  const rows: Row[] = [];
  try {
    key = await createObserveKey(base);
    const otlpBatches = Math.max(ROUNDS, Math.round(TOTAL_SPANS / SPANS_PER_BATCH));
    const nativeBatches = otlpBatches * 2; // the same number of events: two per span
    const now = Date.now() - 3_600_000;
    // Bodies are built before the clock starts, so encoding is not measured on either side.
    const otlp = Array.from({ length: otlpBatches }, (_, b) => otlpBatch(b, now + b * 1000));
    const native = Array.from({ length: nativeBatches }, (_, b) => nativeBatch(b, now + b * 1000));
    let otlpSeconds = 0;
    let nativeSeconds = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const slice = <T>(list: T[]) => list.slice((round * list.length) / ROUNDS, ((round + 1) * list.length) / ROUNDS);
      nativeSeconds += await send(slice(native).map((body) => () => ({ url: `${base}/api/events`, body, type: 'application/json', ok: 201 })));
      otlpSeconds += await send(slice(otlp).map((body) => () => ({ url: `${base}/v1/traces`, body, type: 'application/x-protobuf', ok: 200 })));
    }
    const events = nativeBatches * EVENTS_PER_BATCH;
    const nativeRate = events / nativeSeconds;
    const otlpRate = (otlpBatches * SPANS_PER_BATCH * 2) / otlpSeconds;
    rows.push([
      `native POST /api/events, 1,000-event batches, ${CLIENTS} clients (${events.toLocaleString('en-US')} events)`,
      '',
      `${rate(nativeRate)} events/s`,
    ]);
    rows.push([
      `OTLP POST /v1/traces, 1,000-span protobuf batches, ${CLIENTS} clients (${(otlpBatches * SPANS_PER_BATCH).toLocaleString('en-US')} GenAI spans)`,
      '',
      `${Math.round(otlpRate).toLocaleString('en-US')} events/s (${Math.round(otlpRate / 2).toLocaleString('en-US')} spans/s)`,
    ]);
    const share = (100 * otlpRate) / nativeRate;
    rows.push(['OTLP events/s as a share of native', '≥ 70 %', checked(`${share.toFixed(0)} %`, share >= 70)]);
  } finally {
    await stopServer(child, dataDir, schema);
  }
  printTable(rows);
}

await main();
