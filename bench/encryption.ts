/**
 * `npm run bench` (part): what crypto-shredding costs ingest. Two observe servers (separate
 * processes, SQLite unless DATABASE_URL is set), one with ENCRYPTION_KEY_FILE (payload and metadata
 * sealed with AES-256-GCM under per-subject data keys), one without, fed the same 1,000-event
 * batches in alternating rounds (paired-ingest.ts). Each batch names 200 data subjects (one event in
 * two names one in metadata.subjectId); the others are sealed under their session's key. The issue
 * asks for the cost to be documented, not for a target: the share of the throughput without it is
 * printed (the median of the rounds' shares).
 *
 * BENCH_ENCRYPTION_EVENTS (default 60,000) sets the events each server receives.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLIENTS } from './observe-workload.ts';
import { comparePairedIngest, pairedIngestRows, startKeyedServer, stopKeyedServer } from './paired-ingest.ts';
import { printTable, type Row } from './table.ts';

const EVENTS = Number(process.env.BENCH_ENCRYPTION_EVENTS ?? 60_000);
const EVENTS_PER_BATCH = 1000;
const ROUNDS = 6;
const SUBJECTS_PER_BATCH = 200;

function batch(b: number, startMs: number): string {
  const events = [];
  for (let i = 0; i < EVENTS_PER_BATCH; i++) {
    const subject = i % 2 === 0 ? `customer-${(b * SUBJECTS_PER_BATCH + (i % SUBJECTS_PER_BATCH)) % 5000}@example.com` : null;
    events.push({
      sessionId: `s-${b}-${i % 50}`,
      agentId: `agent-${b % 7}`,
      eventType: i % 2 === 0 ? 'tool_call' : 'tool_response',
      timestamp: new Date(startMs + i).toISOString(),
      payload:
        i % 2 === 0
          ? { toolName: 'crm_lookup', callId: `c${i}`, arguments: { query: `open orders and address of customer ${i} in the northern region` } }
          : {
              toolName: 'crm_lookup',
              callId: `c${i - 1}`,
              result: { orders: 3, summary: `Three open orders, last shipped to warehouse ${i % 17}` },
              durationMs: 80,
            },
      metadata: subject === null ? { env: 'production' } : { env: 'production', subjectId: subject },
    });
  }
  return JSON.stringify({ events });
}

const keyFile = join(mkdtempSync(join(tmpdir(), 'vigil-bench-encryption-')), 'master.key');
writeFileSync(keyFile, randomBytes(32).toString('base64'), { mode: 0o600 });
const on = await startKeyedServer('encryption-on', { ENCRYPTION_KEY_FILE: keyFile });
const off = await startKeyedServer('encryption-off');
const rows: Row[] = [];
try {
  const batches = Math.max(ROUNDS, Math.round(EVENTS / EVENTS_PER_BATCH));
  const now = Date.now() - 3_600_000;
  const bodies = Array.from({ length: batches }, (_, b) => batch(b, now + b));
  const rates = await comparePairedIngest(on, off, bodies, EVENTS_PER_BATCH, ROUNDS);
  const total = (batches * EVENTS_PER_BATCH).toLocaleString('en-US');
  rows.push(
    ...pairedIngestRows(rates, {
      off: `ingest in the clear (${total} events, 1,000-event batches naming ${SUBJECTS_PER_BATCH} subjects, ${CLIENTS} clients; median of ${ROUNDS} rounds)`,
      on: 'ingest sealed under per-subject data keys (same batches, alternating rounds; median)',
      share: 'ingest with encryption',
    }),
  );
} finally {
  await stopKeyedServer(on);
  await stopKeyedServer(off);
}
printTable(rows);
