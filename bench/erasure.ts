/**
 * `npm run bench` (part): erasing a data subject. One observe server (a separate process, SQLite
 * unless DATABASE_URL is set) holds 10,000 events of one subject (metadata.subjectId) across 100
 * sessions, interleaved with as many events of other subjects; `DELETE /api/subjects/:id` then
 * replaces their content, appends the signed erasure leaf, drops them from the full-text index,
 * tombstones their vectors and summaries, and answers the receipt. Target: ≤ 5 s, measured once,
 * in the clear and with crypto-shredding on (the subject's data key destroyed in the key store first).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createObserveKey, startObserve, stopServer, timedErasure } from './server.ts';
import { checked, printTable, type Row } from './table.ts';

const SESSIONS = 100;
const SUBJECT_EVENTS_PER_SESSION = 100;
const SUBJECT = 'bench.subject@example.com';

/** Fills a server with the subject's and others' events, erases the subject, and answers the erasure's row. */
async function measureErasure(name: string, label: string, env: Record<string, string> = {}): Promise<Row> {
  const server = await startObserve(name, { env });
  try {
    const key = await createObserveKey(server.base);
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const start = Date.now() - 3_600_000;
    // Five sessions per batch: 1,000 events, half of them the subject's.
    for (let first = 0; first < SESSIONS; first += 5) {
      const events = [];
      for (let s = first; s < first + 5; s++) {
        for (let i = 0; i < SUBJECT_EVENTS_PER_SESSION * 2; i++) {
          const mine = i % 2 === 0;
          events.push({
            sessionId: `erase-${s}`,
            agentId: `agent-${s % 5}`,
            eventType: 'tool_call',
            timestamp: new Date(start + s * 1000 + i).toISOString(),
            metadata: { subjectId: mine ? SUBJECT : `other-${s}-${i}@example.org` },
            payload: {
              toolName: 'crm_lookup',
              callId: `c${i}`,
              arguments: { query: mine ? `account history of ${SUBJECT}, ticket ${s}-${i}` : `routine ${i}` },
            },
          });
        }
      }
      const response = await fetch(`${server.base}/api/events`, { method: 'POST', headers, body: JSON.stringify({ events }) });
      if (!response.ok) throw new Error(`/api/events: ${response.status} ${(await response.text()).slice(0, 300)}`);
    }
    const { seconds, receipt: body } = await timedErasure<{ eventCount?: number; sessionIds?: string[] }>(server.base, headers, SUBJECT);
    if (body.eventCount !== SESSIONS * SUBJECT_EVENTS_PER_SESSION || body.sessionIds?.length !== SESSIONS)
      throw new Error(`the erasure covered ${body.eventCount} events in ${body.sessionIds?.length} sessions`);
    return [
      `erase a subject${label}: ${body.eventCount.toLocaleString('en-US')} events across ${SESSIONS} sessions (of 20,000 stored), signed receipt answered`,
      '≤ 5 s',
      checked(`${seconds.toFixed(2)} s`, seconds <= 5),
    ];
  } finally {
    await stopServer(server.child, server.dataDir, server.schema);
  }
}

// Sealed: 10,001 data keys (the subject's and one per other subject) in the key store; the receipt waits for the subject's to be destroyed there.
const keyDir = mkdtempSync(join(tmpdir(), 'vigil-bench-erasure-key-'));
const keyFile = join(keyDir, 'master.key');
writeFileSync(keyFile, randomBytes(32).toString('base64'), { mode: 0o600 });
const rows: Row[] = [];
try {
  rows.push(await measureErasure('erasure', ''));
  rows.push(await measureErasure('erasure-sealed', ' sealed (ENCRYPTION_KEY_FILE; its data key destroyed in the key store)', { ENCRYPTION_KEY_FILE: keyFile }));
} finally {
  rmSync(keyDir, { recursive: true, force: true });
}
printTable(rows);
