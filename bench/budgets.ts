/**
 * `npm run bench` (part): budgets enforced at the gate (issue 39 part 1).
 *
 * 1. Policy evaluation with budget conditions, in-process: mean µs per evaluatePolicies() call for
 *    100 policies × 3 rules, each rule matching its action and a `budgets.<name>.spendUsd` or
 *    `.level` condition, over requests that carry 5 budgets' figures (as creation passes them).
 *    Target ≤ 10 µs. (The engine resolves each budget path the set reads once per request, not per
 *    rule: policies/engine.ts, BudgetReads.)
 * 2. Breach-to-enforcement latency with real services in this process (SQLite; the tests also run
 *    it on PostgreSQL: packages/cli/src/budget-enforcement.test.ts): two observe instances on one database, one gate reading spend through the
 *    first (its budget job runs as in production). Each trial, a new agent ingests through the
 *    second instance one event that takes it over a hard threshold; measured from the ingest's
 *    acknowledgement until the gate denies the agent's request and observe shows it paused.
 *    Target p95 ≤ 1 s.
 *
 * BENCH_BUDGET_TRIALS (default 20) sets the trials of part 2.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildGateService, gateConfigFromEnvironment } from '../packages/gate/src/index.ts';
import { compilePolicySet, evaluatePolicies, type EvaluatedRequest, type PolicyDefinition } from '../packages/gate/src/policies/engine.ts';
import { buildObserveService, observeConfigFromEnvironment } from '../packages/observe/src/index.ts';
import { isSafePattern } from '../packages/platform/src/regex-safety.ts';
import { checked, percentile, printTable, type Row } from './table.ts';

const TRIALS = Number(process.env.BENCH_BUDGET_TRIALS ?? 20);
const EVALUATIONS = 1_000_000;
const TOKEN = 'bench-budgets-service-token-0123456789';
const ADMIN = 'gk_bench_budgets_admin_key_0123456789';

// ---------------------------------------------------------------------------------------------
// 1. Policy evaluation with budget conditions
// ---------------------------------------------------------------------------------------------

const BUDGETS = ['agent-day', 'agent-hour', 'session', 'team', 'tenant-month'];

function policies(count: number): PolicyDefinition[] {
  return Array.from({ length: count }, (_, k) => ({
    id: `budget-policy-${String(k).padStart(3, '0')}`,
    name: `budget policy ${k}`,
    priority: k,
    enabled: true,
    rules: [
      { match: { action: `call_${k % 25}`, [`budgets.${BUDGETS[k % 5]}.spendUsd`]: { $lte: 10 + k } }, decision: 'auto_approve' as const },
      { match: { action: `call_${k % 25}`, [`budgets.${BUDGETS[(k + 1) % 5]}.level`]: 'hard' }, decision: 'auto_deny' as const },
      {
        match: { [`budgets.${BUDGETS[(k + 2) % 5]}.spendUsd`]: { $gt: 1000 + k }, urgency: { $in: ['high', 'critical'] } },
        decision: 'route_to_human' as const,
      },
    ],
  }));
}

function requests(n: number): EvaluatedRequest[] {
  return Array.from({ length: n }, (_, i) => ({
    action: `call_${(i * 7) % 40}`,
    status: 'pending',
    urgency: ['low', 'normal', 'high', 'critical'][i % 4]!,
    params: { amount: i % 500 },
    context: { agentId: `agent-${i % 13}`, sessionId: `s-${i % 31}` },
    budget: Object.fromEntries(
      BUDGETS.map((name, b) => {
        const spendUsd = ((i * 13 + b * 37) % 2000) / 10;
        return [name, { spendUsd, softUsd: 50, hardUsd: 150, level: spendUsd >= 150 ? 'hard' : spendUsd >= 50 ? 'soft' : 'ok' }];
      }),
    ),
  }));
}

function benchEvaluation(): number {
  const set = compilePolicySet(policies(100), isSafePattern);
  const mix = requests(1000);
  let sink = 0;
  for (let i = 0; i < 100_000; i++) sink += evaluatePolicies(set, mix[i % mix.length]!).ruleIndex ?? 1;
  const started = performance.now();
  for (let i = 0; i < EVALUATIONS; i++) sink += evaluatePolicies(set, mix[i % mix.length]!).ruleIndex ?? 1;
  const elapsed = performance.now() - started;
  if (sink < 0) throw new Error('unreachable');
  return (elapsed * 1000) / EVALUATIONS;
}

// ---------------------------------------------------------------------------------------------
// 2. Breach to enforcement
// ---------------------------------------------------------------------------------------------

async function post(base: string, key: string, path: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const headers = { 'content-type': 'application/json', ...(key !== '' && { authorization: `Bearer ${key}` }) };
  const response = await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

async function benchEnforcement(): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-bench-budgets-'));
  const env = { LOG_LEVEL: 'silent', INTERNAL_SERVICE_TOKEN: TOKEN, DATABASE_URL: '' };
  const observe = [];
  // Two instances on one database (the same data directory).
  for (let i = 0; i < 2; i++) observe.push(await buildObserveService(observeConfigFromEnvironment(env, { dataDir: join(dir, 'observe') }), { runJobs: false }));
  const urls = await Promise.all(observe.map((o) => o.app.listen({ host: '127.0.0.1', port: 0 })));
  const first = await post(urls[0]!, '', '/api/keys', { name: 'bench' });
  const key = (first.body as { key: string }).key;
  const gate = await buildGateService(gateConfigFromEnvironment({ ...env, GATE_ADMIN_KEY: ADMIN, OBSERVE_URL: urls[0]! }, { dataDir: join(dir, 'gate') }), {
    runJobs: true,
  });
  const gateUrl = await gate.app.listen({ host: '127.0.0.1', port: 0 });
  const latencies: number[] = [];
  try {
    const created = await post(gateUrl, ADMIN, '/api/budgets', { name: `bench-${Date.now()}`, scope: 'agent', scopeValue: null, window: 'day', hardUsd: 1 });
    if (created.status !== 201) throw new Error(`budget: ${JSON.stringify(created.body)}`);
    const run = Date.now().toString(36);
    for (let t = 0; t < TRIALS; t++) {
      const agentId = `bench-${run}-${t}`;
      const event = {
        sessionId: `${agentId}-s`,
        agentId,
        eventType: 'cost_tracked',
        payload: { provider: 'openai', model: 'gpt-4o', inputTokens: 1, outputTokens: 1, totalTokens: 2, costUsd: 1.5 },
      };
      const ingested = await post(urls[1]!, key, '/api/events', { events: [event] });
      if (ingested.status !== 201) throw new Error(`ingest: ${JSON.stringify(ingested.body)}`);
      const acked = performance.now();
      let denied = false;
      let paused = false;
      while (!(denied && paused)) {
        if (performance.now() - acked > 5000) throw new Error(`trial ${t}: not enforced within 5 s`);
        if (!denied)
          denied = ((await post(gateUrl, ADMIN, '/api/requests', { action: 'call', context: { agentId } })).body as { status: string }).status === 'denied';
        if (!paused)
          paused =
            ((await (await fetch(`${urls[0]}/api/agents/${agentId}`, { headers: { authorization: `Bearer ${key}` } })).json()) as { pausedAt: string | null })
              .pausedAt !== null;
        if (!(denied && paused)) await new Promise((resolve) => setTimeout(resolve, 5));
      }
      latencies.push(performance.now() - acked);
    }
  } finally {
    await gate.app.close();
    for (const o of observe) await o.app.close();
  }
  return latencies.sort((a, b) => a - b);
}

const microseconds = benchEvaluation();
const latencies = await benchEnforcement();
const p50 = percentile(latencies, 50);
const p95 = percentile(latencies, 95);
const rows: Row[] = [
  ['policy evaluation with budget conditions, 100 policies (µs/call)', '≤ 10', checked(microseconds.toFixed(2), microseconds <= 10)],
  [`breach → enforcement p50 (ms, ${latencies.length} trials, deny + pause)`, '', p50.toFixed(0)],
  [`breach → enforcement p95 (ms, ${latencies.length} trials, deny + pause)`, '≤ 1000', checked(p95.toFixed(0), p95 <= 1000)],
];
console.log('\nbudgets (SQLite)');
printTable(rows);
