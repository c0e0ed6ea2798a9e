/**
 * `npm run bench` (part): what redaction costs ingest. Two observe servers (separate processes,
 * SQLite unless DATABASE_URL is set), one with 10 redaction rules (5 regular expressions, 5 paths:
 * REDACTION_RULES_FILE) and every built-in detector (REDACTION_DETECTORS=all), one without, fed the
 * same 1,000-event batches by the workload's clients in alternating rounds, so both see the same
 * database sizes. One event in ten carries values the detectors replace. Target: with redaction,
 * at least 80 % of the throughput without it (the median of the rounds' shares).
 *
 * BENCH_REDACTION_EVENTS (default 100,000) sets the events each server receives.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLIENTS } from './observe-workload.ts';
import { comparePairedIngest, pairedIngestRows, startKeyedServer, stopKeyedServer } from './paired-ingest.ts';
import { printTable, type Row } from './table.ts';

const EVENTS = Number(process.env.BENCH_REDACTION_EVENTS ?? 100_000);
const EVENTS_PER_BATCH = 1000;
const ROUNDS = 6;

const RULES = [
  { id: 'employee', kind: 'regex', pattern: 'EMP-\\d{6}', label: 'employee' },
  { id: 'ticket', kind: 'regex', pattern: 'TICKET-[A-Z]{3}-\\d{4}', label: 'ticket' },
  { id: 'passport', kind: 'regex', pattern: '\\b[A-Z]{2}\\d{7}\\b', label: 'passport' },
  { id: 'postcode', kind: 'regex', pattern: '\\b[A-Z]{1,2}\\d[A-Z\\d]? \\d[A-Z]{2}\\b', label: 'postcode' },
  { id: 'internal-host', kind: 'regex', pattern: '\\b(?:db|api|web)-\\d{2}\\.corp\\.internal\\b', label: 'host' },
  { id: 'ssn', kind: 'path', path: 'payload.arguments.customer.ssn', label: 'ssn' },
  { id: 'dob', kind: 'path', path: 'payload.arguments.customer.dateOfBirth', label: 'dob' },
  { id: 'address', kind: 'path', path: 'payload.result.address', label: 'address' },
  { id: 'notes', kind: 'path', path: 'metadata.notes', label: 'notes' },
  { id: 'any-token', kind: 'path', path: 'metadata.*.token', label: 'token' },
];

function batch(b: number, startMs: number): string {
  const events = [];
  for (let i = 0; i < EVENTS_PER_BATCH; i++) {
    const sessionId = `s-${b}-${i % 50}`;
    const personal = i % 10 === 0;
    const query = personal
      ? `refund for ann.lee@example.com, card 4111 1111 1111 1111, call +44 20 7946 0958`
      : `quarterly revenue ${i} for the northern region`;
    events.push({
      sessionId,
      agentId: `agent-${b % 7}`,
      eventType: i % 2 === 0 ? 'tool_call' : 'tool_response',
      timestamp: new Date(startMs + i).toISOString(),
      payload:
        i % 2 === 0
          ? { toolName: 'web_search', callId: `c${i}`, arguments: { query, customer: { name: 'Ann Lee', ssn: '078-05-1120' } } }
          : { toolName: 'web_search', callId: `c${i - 1}`, result: { hits: 10, summary: `Found 10 results about ${query}` }, durationMs: 120 },
      metadata: { env: 'production', region: 'eu-west-1' },
    });
  }
  return JSON.stringify({ events });
}

const rulesFile = join(mkdtempSync(join(tmpdir(), 'vigil-bench-redaction-')), 'rules.json');
writeFileSync(rulesFile, JSON.stringify(RULES));
const on = await startKeyedServer('redaction-on', { REDACTION_DETECTORS: 'all', REDACTION_RULES_FILE: rulesFile });
const off = await startKeyedServer('redaction-off');
const rows: Row[] = [];
try {
  const batches = Math.max(ROUNDS, Math.round(EVENTS / EVENTS_PER_BATCH));
  const now = Date.now() - 3_600_000;
  const bodies = Array.from({ length: batches }, (_, b) => batch(b, now + b));
  const rates = await comparePairedIngest(on, off, bodies, EVENTS_PER_BATCH, ROUNDS);
  const total = (batches * EVENTS_PER_BATCH).toLocaleString('en-US');
  rows.push(
    ...pairedIngestRows(
      rates,
      {
        off: `ingest without redaction (${total} events, 1,000-event batches, ${CLIENTS} clients; median of ${ROUNDS} rounds)`,
        on: 'ingest with 10 rules and every detector (same batches, alternating rounds; median)',
        share: 'ingest with redaction',
      },
      80,
    ),
  );
} finally {
  await stopKeyedServer(on);
  await stopKeyedServer(off);
}
printTable(rows);
