/**
 * The services of bench/adapters.ts, in a process of their own so that their CPU is not counted as
 * the agent's: a gate and an observe (SQLite), with a policy that approves `bench_refund` at once.
 * Prints their addresses and keys as one JSON line; stops on SIGTERM.
 */
import { startLiveServices } from '../packages/cli/src/testing.ts';

const live = await startLiveServices();
const admin = { 'content-type': 'application/json', authorization: `Bearer ${live.gateAdminKey}` };
const policy = { name: 'bench', priority: 10, rules: [{ match: { action: 'bench_refund' }, decision: 'auto_approve' }] };
const created = await fetch(`${live.gateUrl}/api/policies`, { method: 'POST', headers: admin, body: JSON.stringify(policy) });
if (created.status !== 201) throw new Error(`policy creation answered ${created.status}`);
const agentKey = await live.gateKey('bench-agent', ['request:create', 'request:read']);
console.log(JSON.stringify({ gateUrl: live.gateUrl, observeUrl: live.observeUrl, observeKey: live.observeKey, agentKey }));
process.on('SIGTERM', () => void live.close().then(() => process.exit(0)));
