/**
 * The observe half of issue 18's tamper matrix, shared by tamper-matrix.test.ts and
 * tamper-matrix-sessions.test.ts: an attacker with write access to the database, who knows the
 * published hash recipe, tampers in each of the ways below after the auditor saved a checkpoint.
 * `vigil verify --url --checkpoint SAVED` (a real process, `--deep` for derived data) must report
 * every one, naming where; the server's own checks (GET /api/audit/verify) must report every one
 * that does not need the saved checkpoint.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { appendLeaves, type Checkpoint } from '@vigil/platform';
import type { TestBackend } from '@vigil/platform/testing';
import type { ObserveSchema } from '@vigil/observe';
import { ago, custom, ingestEvents, insertEventCopy, relinkChain, started, startTestObserve, type EventAck, type TestObserve } from '@vigil/observe/testing';
import { runVerify } from './verify-testkit.ts';

const llmResponse = (sessionId: string, timestamp: string, costUsd: number) => ({
  sessionId,
  agentId: 'agent-t',
  eventType: 'llm_response',
  timestamp,
  payload: {
    callId: `l-${timestamp}`,
    provider: 'openai',
    model: 'gpt-4o-mini',
    completion: 'ok',
    finishReason: 'stop',
    usage: { inputTokens: 420, outputTokens: 96 },
    costUsd,
    latencyMs: 850,
  },
});

/** One world per case: three sessions, a checkpoint saved outside the service, then the tampering. */
export interface World {
  observe: TestObserve;
  url: string;
  saved: string;
  /** Acknowledged events of each session, in seq order. */
  acks: Record<'a' | 'b' | 'c', EventAck[]>;
  dir: string;
}

export async function world(backend: TestBackend): Promise<World> {
  const observe = await startTestObserve(backend);
  await observe.service.app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(observe.service.app.server.address() as AddressInfo).port}`;
  const session = (id: string, minutes: number) => [
    started(id, 'agent-t', ago(minutes)),
    custom(id, 'agent-t', ago(minutes - 0.1)),
    llmResponse(id, ago(minutes - 0.2), 0.002),
    custom(id, 'agent-t', ago(minutes - 0.3)),
    llmResponse(id, ago(minutes - 0.4), 0.003),
    custom(id, 'agent-t', ago(minutes - 0.5)),
  ];
  const a = await ingestEvents(observe, session('t-a', 90));
  const b = await ingestEvents(observe, session('t-b', 80));
  const c = await ingestEvents(observe, session('t-c', 70));
  const response = await observe.call({ method: 'POST', url: '/api/audit/checkpoint' });
  assert.equal(response.statusCode, 201, response.body);
  const dir = mkdtempSync(join(tmpdir(), 'vigil-tamper-'));
  const saved = join(dir, 'saved-checkpoint.json');
  writeFileSync(saved, JSON.stringify(response.json<Checkpoint>()));
  return { observe, url, saved, acks: { a, b, c }, dir };
}

export async function serverVerdict(
  observe: TestObserve,
  sessionId: string,
): Promise<{ valid: boolean; brokenAt: { seq: number; reason: string } | null } | 404> {
  const response = await observe.call({ method: 'GET', url: `/api/audit/verify?sessionId=${sessionId}` });
  if (response.statusCode === 404) return 404;
  assert.equal(response.statusCode, 200, response.body);
  return response.json();
}

export interface Case {
  name: string;
  tamper(w: World): Promise<void>;
  /** Where `vigil verify` must point: a finding with this session (and seq / event, when given). */
  where: { sessionId: string; seq?: number; eventId?: (w: World) => string; check?: string };
  /** The server's own check of the session reports it (no saved checkpoint needed). */
  online: boolean;
  deep?: boolean;
}

const db = (w: World) => w.observe.service.context.database.db;

export const CASES: Case[] = [
  {
    name: 'payload edited',
    tamper: (w) =>
      db(w)
        .updateTable('events')
        .set({ payload: '{"forged":true}' })
        .where('id', '=', w.acks.a[1]!.id)
        .execute()
        .then(() => undefined),
    where: { sessionId: 't-a', seq: 1 },
    online: true,
  },
  {
    name: 'timestamp edited',
    tamper: async (w) => {
      await db(w)
        .updateTable('events')
        .set({ ts: Date.parse(ago(200)) })
        .where('id', '=', w.acks.a[2]!.id)
        .execute();
    },
    where: { sessionId: 't-a', seq: 2 },
    online: true,
  },
  {
    name: 'severity edited',
    tamper: async (w) => {
      await db(w).updateTable('events').set({ severity: 'debug' }).where('id', '=', w.acks.b[3]!.id).execute();
    },
    where: { sessionId: 't-b', seq: 3 },
    online: true,
  },
  {
    name: 'an event deleted',
    tamper: async (w) => {
      await db(w).deleteFrom('events').where('id', '=', w.acks.a[2]!.id).execute();
    },
    where: { sessionId: 't-a', eventId: (w) => w.acks.a[2]!.id },
    online: true,
  },
  {
    name: 'two events swapped',
    tamper: async (w) => {
      const [x, y] = [w.acks.b[1]!.id, w.acks.b[3]!.id];
      await db(w).updateTable('events').set({ seq: 99 }).where('id', '=', x).execute();
      await db(w).updateTable('events').set({ seq: 1 }).where('id', '=', y).execute();
      await db(w).updateTable('events').set({ seq: 3 }).where('id', '=', x).execute();
    },
    where: { sessionId: 't-b', seq: 1 },
    online: true,
  },
  {
    name: 'an event moved to another session',
    tamper: async (w) => {
      await db(w).updateTable('events').set({ session_id: 't-c', seq: 6 }).where('id', '=', w.acks.b[5]!.id).execute();
    },
    where: { sessionId: 't-b', seq: 5 },
    online: true,
  },
  {
    name: 'renumbered after a deletion',
    tamper: async (w) => {
      await db(w).deleteFrom('events').where('id', '=', w.acks.c[2]!.id).execute();
      for (const ack of w.acks.c.slice(3))
        await db(w)
          .updateTable('events')
          .set((eb) => ({ seq: eb('seq', '-', 1) }))
          .where('id', '=', ack.id)
          .execute();
    },
    where: { sessionId: 't-c' },
    online: true,
  },
  {
    name: 'tail truncated, head left',
    tamper: async (w) => {
      await db(w).deleteFrom('events').where('id', 'in', [w.acks.a[4]!.id, w.acks.a[5]!.id]).execute();
    },
    where: { sessionId: 't-a', eventId: (w) => w.acks.a[4]!.id },
    online: true,
  },
  {
    name: 'tail truncated and head rewritten',
    tamper: async (w) => {
      await db(w).deleteFrom('events').where('id', 'in', [w.acks.a[4]!.id, w.acks.a[5]!.id]).execute();
      await db(w).updateTable('sessions').set({ last_seq: 3, last_hash: w.acks.a[3]!.hash }).where('id', '=', 't-a').execute();
    },
    where: { sessionId: 't-a', eventId: (w) => w.acks.a[4]!.id },
    // The server holds the chain to the session's leaves in its log (issue 36).
    online: true,
  },
  {
    name: 'chain and head rewritten after an edit',
    tamper: async (w) => {
      await db(w).updateTable('events').set({ payload: '{"forged":true}' }).where('id', '=', w.acks.b[2]!.id).execute();
      await relinkChain(w.observe.service.context.database, 't-b');
    },
    where: { sessionId: 't-b', seq: 2 },
    online: true,
  },
  {
    name: 'a forged event appended with a correct hash and head',
    tamper: async (w) => {
      const last = w.acks.c[5]!;
      const row = await db(w).selectFrom('events').selectAll().where('id', '=', last.id).executeTakeFirstOrThrow();
      await insertEventCopy(w.observe.service.context.database, last.id, {
        id: 'forged-append',
        seq: 6,
        ts: row.ts + 1,
        payload: '{"data":{"forged":true},"type":"step"}',
      });
      await relinkChain(w.observe.service.context.database, 't-c');
    },
    where: { sessionId: 't-c', seq: 6 },
    online: true,
  },
  {
    name: 'an event stored past the head',
    tamper: async (w) => {
      await insertEventCopy(w.observe.service.context.database, w.acks.a[5]!.id, { id: 'past-head', seq: 6 });
    },
    where: { sessionId: 't-a', seq: 6 },
    online: true,
  },
  {
    name: 'a whole session deleted',
    tamper: async (w) => {
      await db(w).deleteFrom('events').where('session_id', '=', 't-b').execute();
      await db(w).deleteFrom('sessions').where('id', '=', 't-b').execute();
    },
    where: { sessionId: 't-b' },
    online: false,
  },
  {
    name: 'a whole session deleted and the log rebuilt without it',
    tamper: async (w) => {
      const database = w.observe.service.context.database;
      await db(w).deleteFrom('events').where('session_id', '=', 't-b').execute();
      await db(w).deleteFrom('sessions').where('id', '=', 't-b').execute();
      const kept = await db(w).selectFrom('audit_log_leaves').selectAll().where('scope_id', '!=', 't-b').orderBy('idx').execute();
      await db(w).deleteFrom('audit_log_leaves').execute();
      await db(w).deleteFrom('audit_log_nodes').execute();
      await db(w).deleteFrom('audit_checkpoints').execute();
      await db(w).updateTable('audit_log_head').set({ size: 0 }).execute();
      await db(w).updateTable('audit_log_built').set({ size: 0 }).execute();
      const events = new Map((await db(w).selectFrom('events').select(['id', 'hash']).execute()).map((e) => [e.id, e.hash]));
      await database.db.transaction().execute((trx) =>
        appendLeaves<ObserveSchema>(
          trx,
          database.dialect,
          kept.map((leaf) => ({ itemId: leaf.item_id, scopeId: leaf.scope_id!, kind: 'event', data: events.get(leaf.item_id)! })),
        ),
      );
      // The service signs the rebuilt log, as its checkpoint job would.
      assert.equal((await w.observe.call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);
    },
    // The old leaves are gone, so no session can be named: the saved checkpoint is what the new log fails.
    where: { sessionId: '', check: 'consistency' },
    online: false,
  },
  {
    name: "an event's derived cost edited",
    tamper: async (w) => {
      await db(w).updateTable('events').set({ cost_usd: 9 }).where('id', '=', w.acks.a[2]!.id).execute();
    },
    where: { sessionId: 't-a', eventId: (w) => w.acks.a[2]!.id },
    online: false,
    deep: true,
  },
  {
    name: "the session row's counters and cost edited",
    tamper: async (w) => {
      await db(w).updateTable('sessions').set({ error_count: 0, total_cost_usd: 0, event_count: 2 }).where('id', '=', 't-c').execute();
    },
    where: { sessionId: 't-c' },
    online: false,
    deep: true,
  },
  {
    name: 'an hourly rollup edited',
    tamper: async (w) => {
      await db(w).updateTable('event_rollups').set({ cost_usd: 100 }).where('event_type', '=', 'llm_response').execute();
    },
    where: { sessionId: '' },
    online: false,
    deep: true,
  },
];

/** One test per case: a fresh world, the tampering, the server's own check where it sees it, then `vigil verify`. */
export function registerCases(backend: TestBackend, cases: readonly Case[]): void {
  for (const tamper of cases) {
    test(`${tamper.name}: detected${tamper.online ? ', by the server too' : ''}`, async () => {
      const w = await world(backend);
      try {
        await tamper.tamper(w);
        if (tamper.online) {
          const verdict = await serverVerdict(w.observe, tamper.where.sessionId);
          assert.notEqual(verdict, 404);
          assert.equal((verdict as { valid: boolean }).valid, false, 'the server reports it without a saved checkpoint');
        }
        const result = await runVerify(['--url', w.url, '--checkpoint', w.saved, ...(tamper.deep ? ['--deep'] : [])], w.observe.key);
        assert.equal(result.status, 1, `exit 1 (tampered): ${result.stderr}\n${JSON.stringify(result.report)}`);
        assert.equal(result.report.valid, false);
        const { sessionId, seq, eventId, check } = tamper.where;
        const expectedEvent = eventId?.(w);
        const pointed = result.report.findings.some(
          (finding) =>
            (check === undefined || finding.check === check) &&
            (sessionId === '' || finding.sessionId === sessionId || finding.message.includes(sessionId)) &&
            (seq === undefined || finding.seq === seq || finding.message.includes(`seq ${seq}`)) &&
            (expectedEvent === undefined || finding.eventId === expectedEvent || finding.message.includes(expectedEvent)),
        );
        assert.ok(pointed, `a finding names ${JSON.stringify({ sessionId, seq, eventId: expectedEvent })}: ${JSON.stringify(result.report.findings)}`);
      } finally {
        await w.observe.close();
        rmSync(w.dir, { recursive: true, force: true });
      }
    });
  }
}
