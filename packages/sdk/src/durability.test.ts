/**
 * Issue 34's done-when tests for the client: the packed SDK, installed outside the monorepo, streams
 * 20,000 events from a plain `node` agent while (1) observe — a real process on SQLite — is stopped
 * for 60 s and started again on the same data, (2) observe's PostgreSQL is unreachable for 30 s
 * (a TCP proxy between them refuses every connection; the shared PostgreSQL server is never
 * touched), (3) the agent itself is killed with SIGKILL mid-stream and started again on its disk
 * spool. Each event carries its index; the stored events are listed and must hold every index
 * exactly once: none missing, none twice (observe's Idempotency-Key makes a retried batch whose
 * answer was lost count once).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  dropSchemas,
  eventually,
  firstObserveKey,
  newSchemaName,
  POSTGRES_URL,
  servicesSkipReason,
  ServiceProcess,
  TcpProxy,
  tempDir,
} from '@vigil/cli/testing';
import { assertPackagesBuilt } from '../scripts/built.ts';
import { AgentProcess, exactlyOnceProblems, installPackedSdk, storedIndices } from './packed-harness.ts';

const EVENTS = 20_000;
const SESSIONS = 4;

/**
 * The agent: plain node on the installed package, default delivery options (the environment
 * names observe). It tracks COUNT events over SESSIONS sessions at RATE per second, printing
 * `pushed <i>` once track(i) has returned when PRINT_PUSHED is set, then closes and prints
 * what close() resolved with. Every drop is printed too (there must be none).
 */
const AGENT = `
import { ObserveClient } from '@vigil/sdk/node';
const { COUNT, RATE, PREFIX, SPOOL, PRINT_PUSHED } = process.env;
const vigil = new ObserveClient({ spoolDir: SPOOL || undefined, onError: (e) => console.log('dropped ' + e.reason + ' ' + e.count + ' ' + e.message) });
const started = Date.now();
for (let i = 0; i < Number(COUNT); i++) {
  vigil.track({ sessionId: PREFIX + '-' + (i % ${SESSIONS}), agentId: 'durability-agent', eventType: 'custom', payload: { type: 'tick', data: { i } } });
  if (PRINT_PUSHED) console.log('pushed ' + i);
  if (i % 100 === 99) await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + ((i + 1) * 1000) / Number(RATE) - Date.now())));
}
console.log('closed ' + JSON.stringify(await vigil.close()));
`;

const sessionsOf = (prefix: string) => Array.from({ length: SESSIONS }, (_, s) => `${prefix}-${s}`);

let appDir: string;
let workDir: string;
const dirs: string[] = [];

before(async () => {
  assertPackagesBuilt();
  ({ appDir, workDir } = await installPackedSdk());
});

after(() => {
  for (const dir of [appDir, workDir, ...dirs]) if (dir) rmSync(dir, { recursive: true, force: true });
});

function startAgent(observeUrl: string, apiKey: string, prefix: string, extra: Record<string, string> = {}): AgentProcess {
  return new AgentProcess(appDir, `${prefix}.mjs`, AGENT, {
    VIGIL_URL: observeUrl,
    VIGIL_API_KEY: apiKey,
    COUNT: String(EVENTS),
    RATE: '500',
    PREFIX: prefix,
    ...extra,
  });
}

/** Waits for the agent to exit 0 having dropped nothing; answers what its close() resolved with. */
async function finished(agent: AgentProcess): Promise<{ stored: number; dropped: number; spooled: number }> {
  assert.equal(await agent.exited, 0, agent.stderr);
  assert.doesNotMatch(agent.stdout, /^dropped /m);
  return JSON.parse(agent.lastLine('closed ')!) as { stored: number; dropped: number; spooled: number };
}

async function assertStoredExactlyOnce(observeUrl: string, apiKey: string, prefix: string, count: number): Promise<void> {
  const indices = await storedIndices(observeUrl, apiKey, sessionsOf(prefix));
  assert.deepEqual(exactlyOnceProblems(indices, count), { missing: [], duplicated: [], unexpected: [] });
  assert.equal(indices.length, count);
}

/** Once observe holds `count` events of the agent (so the outage strikes mid-stream). */
async function someStored(observeUrl: string, apiKey: string, prefix: string, count: number): Promise<void> {
  await eventually(
    () => storedIndices(observeUrl, apiKey, sessionsOf(prefix)).then((indices) => indices.length),
    (n) => n >= count,
    60_000,
    `${count} events stored before the outage`,
  );
}

/** A real observe process on a data directory of its own (SQLite unless `env` names PostgreSQL), started. */
async function startObserve(env: Record<string, string> = {}): Promise<ServiceProcess> {
  const dataDir = tempDir('vigil-durability-');
  dirs.push(dataDir);
  return (await ServiceProcess.create('observe', env, dataDir)).start();
}

/** The agent streams its 20,000 events into `observe`; `outage` strikes once some are stored; then every event must be stored exactly once. */
async function streamThrough(observe: ServiceProcess, name: string, outage: () => Promise<void>): Promise<void> {
  const key = await firstObserveKey(observe.base);
  const prefix = `${name}-${Date.now()}`;
  const agent = startAgent(observe.base, key, prefix);
  await someStored(observe.base, key, prefix, 300);
  await outage();
  assert.deepEqual(await finished(agent), { stored: EVENTS, dropped: 0, spooled: 0 });
  await assertStoredExactlyOnce(observe.base, key, prefix, EVENTS);
}

describe('the packed SDK rides out outages: every event stored exactly once', { timeout: 600_000 }, () => {
  test('observe (SQLite) stopped for 60 s while the agent streams 20,000 events, then started again on the same data', { timeout: 180_000 }, async () => {
    const observe = await startObserve();
    try {
      await streamThrough(observe, 'restart', async () => {
        await observe.stop();
        await sleep(60_000);
        await observe.start();
      });
    } finally {
      await observe.kill();
    }
  });

  test('PostgreSQL unreachable for 30 s (every connection of observe refused) while the agent streams 20,000 events', { timeout: 180_000 }, async (t) => {
    const skip = await servicesSkipReason(false);
    if (skip) return t.skip(skip);
    const target = new URL(POSTGRES_URL);
    const proxy = await new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) }).start();
    const proxied = new URL(POSTGRES_URL);
    proxied.host = proxy.url;
    const schema = newSchemaName('durability');
    const observe = await startObserve({ DATABASE_URL: proxied.toString(), OBSERVE_DB_SCHEMA: schema, DATABASE_CONNECT_TIMEOUT_MS: '1000' });
    try {
      await streamThrough(observe, 'pg-outage', async () => {
        await proxy.cut('reset');
        await sleep(30_000);
        await proxy.restore();
      });
    } finally {
      await observe.kill();
      await proxy.stop();
      await dropSchemas(schema);
    }
  });

  test(
    'the agent killed with SIGKILL mid-stream and started again on its disk spool: every event it pushed is stored exactly once',
    { timeout: 180_000 },
    async () => {
      const spool = mkdtempSync(join(tmpdir(), 'vigil-durability-spool-'));
      dirs.push(spool);
      const observe = await startObserve();
      try {
        const key = await firstObserveKey(observe.base);
        const prefix = `agent-kill-${Date.now()}`;
        const crashed = startAgent(observe.base, key, prefix, { SPOOL: spool, PRINT_PUSHED: '1', RATE: '1000' });
        // Some batches stored before the crash (the last may be stored without its settle record: resent, stored once), most to come.
        await someStored(observe.base, key, prefix, 1000);
        crashed.child.kill('SIGKILL');
        await crashed.exited;
        // track(i) returned for every printed i; the one after the last printed may have returned too.
        // 1,000 stored means indices 0–999 were pushed, so the last printed is at least 999.
        const printed = Number(crashed.lastLine('pushed '));
        assert.ok(printed >= 999 && printed < EVENTS - 1, `killed mid-stream, after ${printed + 1} events`);

        const restarted = startAgent(observe.base, key, prefix, { SPOOL: spool, COUNT: '0' });
        const { dropped, spooled } = await finished(restarted);
        assert.deepEqual({ dropped, spooled }, { dropped: 0, spooled: 0 });
        const indices = await storedIndices(observe.base, key, sessionsOf(prefix));
        const pushed = indices.length === printed + 2 ? printed + 2 : printed + 1;
        assert.deepEqual(exactlyOnceProblems(indices, pushed), { missing: [], duplicated: [], unexpected: [] });
        assert.equal(indices.length, pushed);
      } finally {
        await observe.kill();
      }
    },
  );
});
