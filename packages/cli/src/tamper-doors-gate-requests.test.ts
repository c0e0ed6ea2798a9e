/**
 * Issue 36's door on the gate's request row: a database write that flips a pending request to
 * approved, raises an approved request's amount or rewrites its decider. The gate refuses the row
 * wherever it would be read or acted on (GET, the list an agent polls, decide, confirm) with
 * 500 "does not match its audit trail", and `vigil verify` (a real process) names the request, exit 1, against a
 * checkpoint saved before the tampering.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { assertGateError, startTestGate, TEST_ADMIN_KEY, type TestGate } from '@vigil/gate/testing';
import type { Checkpoint } from '@vigil/platform';
import { describeEachDatabase, type TestBackend } from '@vigil/platform/testing';
import { runVerify } from './verify-testkit.ts';

interface GateReport {
  valid: boolean;
  summary: string;
  findings: { check: string; message: string; requestId?: string }[];
  notes: string[];
}

/** A pending request and an approved one (amount 5), a checkpoint saved outside the gate, then the tampering. */
interface World {
  gate: TestGate;
  url: string;
  saved: string;
  pending: string;
  approved: string;
  dir: string;
}

async function world(backend: TestBackend): Promise<World> {
  const gate = await startTestGate(backend);
  await gate.service.app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(gate.service.app.server.address() as AddressInfo).port}`;
  const ok = async <T>(method: 'GET' | 'POST', path: string, payload?: unknown, status = 200): Promise<T> => {
    const response = await gate.call({ method, url: path, ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
    assert.equal(response.statusCode, status, `${method} ${path}: ${response.body}`);
    return response.json<T>();
  };
  const pending = (await ok<{ id: string }>('POST', '/api/requests', { action: 'payments.send', params: { amount: 5, to: 'acme' } }, 201)).id;
  const approved = (await ok<{ id: string }>('POST', '/api/requests', { action: 'payments.send', params: { amount: 5, to: 'acme' } }, 201)).id;
  await ok('POST', `/api/requests/${approved}/decide`, { decision: 'approved', reason: 'routine' });
  const checkpoint = await ok<Checkpoint>('POST', '/api/audit/checkpoint', undefined, 201);
  const dir = mkdtempSync(join(tmpdir(), 'vigil-gate-row-tamper-'));
  const saved = join(dir, 'saved-checkpoint.json');
  writeFileSync(saved, JSON.stringify(checkpoint));
  return { gate, url, saved, pending, approved, dir };
}

const db = (w: World) => w.gate.service.context.database.db;

interface RowCase {
  name: string;
  request: (w: World) => string;
  tamper(w: World): Promise<void>;
  /** What the finding of `vigil verify` says differs. */
  names: RegExp;
}

const CASES: RowCase[] = [
  {
    name: 'a pending request flipped to approved',
    request: (w) => w.pending,
    tamper: async (w) => {
      await db(w)
        .updateTable('requests')
        .set({ status: 'approved', decided_by: 'api:admin', decided_at: w.gate.clock.now(), decision_reason: 'looks fine' })
        .where('id', '=', w.pending)
        .execute();
    },
    names: /status is "approved" in the row but "pending" in its audit chain/,
  },
  {
    name: "an approved request's amount raised from 5 to 5,000,000",
    request: (w) => w.approved,
    tamper: async (w) => {
      await db(w).updateTable('requests').set({ params: '{"amount":5000000,"to":"acme"}' }).where('id', '=', w.approved).execute();
    },
    names: /params, context, urgency, expiresAt or policy decision differ from what its created entry committed to/,
  },
  {
    name: "an approved request's decider rewritten",
    request: (w) => w.approved,
    tamper: async (w) => {
      await db(w).updateTable('requests').set({ decided_by: 'dashboard:ceo' }).where('id', '=', w.approved).execute();
    },
    names: /decidedBy is "dashboard:ceo" in the row but "api:[^"]+" in its audit chain/,
  },
];

await describeEachDatabase('tamper doors: the gate request row', (backend) => {
  test('untouched: the rows are served and `vigil verify` against the saved checkpoint is valid (exit 0)', async () => {
    const w = await world(backend);
    try {
      for (const id of [w.pending, w.approved]) assert.equal((await w.gate.call({ method: 'GET', url: `/api/requests/${id}` })).statusCode, 200);
      assert.equal((await w.gate.call({ method: 'GET', url: '/api/requests' })).statusCode, 200);
      const result = await runVerify<GateReport>(['--url', w.url, '--checkpoint', w.saved], TEST_ADMIN_KEY);
      assert.equal(result.status, 0, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.equal(result.report.valid, true);
    } finally {
      await w.gate.close();
      rmSync(w.dir, { recursive: true, force: true });
    }
  });

  for (const door of CASES) {
    test(`${door.name}: refused on every read and action, and named by vigil verify (exit 1)`, async () => {
      const w = await world(backend);
      try {
        await door.tamper(w);
        const id = door.request(w);
        const refused = (response: Parameters<typeof assertGateError>[0], what: string) => {
          const message = assertGateError(response, 500, 'internal_error', what);
          assert.match(message, new RegExp(`Request ${id} does not match its audit trail`), what);
        };
        refused(await w.gate.call({ method: 'GET', url: `/api/requests/${id}` }), 'GET /api/requests/:id');
        refused(await w.gate.call({ method: 'GET', url: '/api/requests' }), 'GET /api/requests (the poll)');
        refused(await w.gate.call({ method: 'GET', url: '/api/requests?status=approved' }), 'GET /api/requests?status=approved');
        const acted =
          id === w.pending
            ? await w.gate.call({ method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: 'denied' } })
            : await w.gate.call({ method: 'POST', url: `/api/requests/${id}/confirm`, payload: { result: { sent: 5_000_000 } } });
        refused(acted, 'acting on it');
        const trail = await w.gate.call({ method: 'GET', url: `/api/requests/${id}/audit` });
        assert.equal(trail.statusCode, 200, 'its audit trail is still shown');
        assert.equal(trail.json<unknown[]>().length, id === w.pending ? 1 : 2, 'and nothing was written to it');
        const verdict = await w.gate.call({ method: 'GET', url: `/api/requests/${id}/audit/verify` });
        assert.equal(verdict.statusCode, 200, verdict.body);
        assert.equal(verdict.json<{ valid: boolean }>().valid, false, 'the gate reports it without a saved checkpoint');
        assert.match(verdict.json<{ reason: string }>().reason, /^the request row does not match its chain: /);

        const result = await runVerify<GateReport>(['--url', w.url, '--checkpoint', w.saved], TEST_ADMIN_KEY);
        assert.equal(result.status, 1, `exit 1 (tampered): ${result.stderr}\n${JSON.stringify(result.report)}`);
        assert.equal(result.report.valid, false);
        const finding = result.report.findings.find((f) => f.check === 'request-row' && f.requestId === id);
        assert.ok(finding, `a request-row finding names ${id}: ${JSON.stringify(result.report.findings)}`);
        assert.match(finding.message, door.names);
      } finally {
        await w.gate.close();
        rmSync(w.dir, { recursive: true, force: true });
      }
    });
  }
});
