/**
 * `npm run bench` (part): erasing a data subject from the gate. One gate server (a separate
 * process, SQLite unless DATABASE_URL is set) holds 2,000 decided requests of one subject
 * (context.subjectId), half of them confirmed, among as many of other subjects; `DELETE
 * /api/subjects/:id` then checks each against its trail, replaces their content and their entries'
 * details, appends the signed erasure leaf and answers the receipt. Target: ≤ 5 s (observe's for
 * 10,000 events), measured once.
 */
import { startGate, stopServer, timedErasure } from './server.ts';
import { checked, printTable, type Row } from './table.ts';

const SUBJECT_REQUESTS = 2000;
const SUBJECT = 'bench.subject@example.com';
const ADMIN_KEY = 'gk_bench_erasure_admin_key_0123456789';
/** Requests in flight at once while filling the gate. */
const CONCURRENCY = 32;

const server = await startGate('gate-erasure', ADMIN_KEY);
const rows: Row[] = [];
try {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` };
  const call = async (method: string, path: string, body: unknown): Promise<{ id: string }> => {
    const response = await fetch(`${server.base}${path}`, { method, headers, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${(await response.text()).slice(0, 300)}`);
    return (await response.json()) as { id: string };
  };
  const fill = async (i: number): Promise<void> => {
    const mine = i % 2 === 0;
    const subjectId = mine ? SUBJECT : `other-${i}@example.org`;
    const { id } = await call('POST', '/api/requests', {
      action: 'crm.update',
      params: { note: `account history of ${subjectId}, ticket ${i}` },
      context: { subjectId },
    });
    await call('POST', `/api/requests/${id}/decide`, { decision: 'approved', reason: `checked for ${subjectId}` });
    if (i % 4 === 0) await call('POST', `/api/requests/${id}/confirm`, { result: { done: `updated ${subjectId}` } });
  };
  for (let first = 0; first < SUBJECT_REQUESTS * 2; first += CONCURRENCY)
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, SUBJECT_REQUESTS * 2 - first) }, (_, k) => fill(first + k)));
  const { seconds, receipt: body } = await timedErasure<{ requestCount?: number }>(server.base, headers, SUBJECT);
  if (body.requestCount !== SUBJECT_REQUESTS) throw new Error(`the erasure covered ${body.requestCount} requests`);
  rows.push([
    `gate: erase a subject: ${SUBJECT_REQUESTS.toLocaleString('en-US')} decided requests (half confirmed) of ${(SUBJECT_REQUESTS * 2).toLocaleString('en-US')} stored, signed receipt answered`,
    '≤ 5 s',
    checked(`${seconds.toFixed(2)} s`, seconds <= 5),
  ]);
} finally {
  await stopServer(server.child, server.dataDir, server.schema);
}
printTable(rows);
