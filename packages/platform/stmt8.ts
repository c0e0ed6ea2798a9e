import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const proto = (Database as any).prototype;
const stats = new Map<string, { n: number; ns: bigint }>();
const origPrepare = proto.prepare;
proto.prepare = function (src: string, ...rest: unknown[]) {
  const stmt = origPrepare.call(this, src, ...rest);
  for (const m of ['run', 'all', 'get', 'iterate']) {
    const f = stmt[m];
    if (typeof f !== 'function') continue;
    stmt[m] = function (...a: unknown[]) {
      const t = process.hrtime.bigint();
      try { return f.apply(this, a); } finally {
        const k = src.replace(/\s+/g, ' ').slice(0, 100);
        const s = stats.get(k) ?? { n: 0, ns: 0n };
        s.n++; s.ns += process.hrtime.bigint() - t; stats.set(k, s);
      }
    };
  }
  return stmt;
};
const { buildGateService } = await import(process.cwd() + '/../gate/src/app.ts');
const { gateConfigFromEnvironment } = await import(process.cwd() + '/../gate/src/config.ts');
const dataDir = mkdtempSync(join(tmpdir(), 'vigil-prof-'));
const KEY = 'gk_test_admin_key_0123456789abcdef';
const base = gateConfigFromEnvironment({ LOG_LEVEL: 'silent', GATE_ADMIN_KEY: KEY }, { dataDir });
const service = await buildGateService({ ...base, database: { kind: 'sqlite', file: join(dataDir, 'gate.db'), synchronous: 'NORMAL' } }, { runJobs: false });
const actions = ['deploy', 'pay', 'email.send', 'db.migrate', 'file.delete', 'shell.exec', 'http.post'];
const urg = ['low', 'normal', 'high', 'critical'];
const body = (i: number) => JSON.stringify({ action: actions[i % 7], params: { service: `svc-${i % 50}`, replicas: i % 7 }, context: { agentId: `agent-${i % 5}` }, urgency: urg[i % 4] });
const N = Number(process.env.N ?? 6000);
let next = 0;
const worker = async () => { while (next < N) { const i = next++; const r = await service.app.inject({ method: 'POST', url: '/api/requests', payload: body(i), headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' } }); if (r.statusCode !== 201) throw new Error(r.body); } };
await Promise.all(Array.from({ length: 8 }, worker));
stats.clear(); next = 0;
const c0 = process.cpuUsage();
await Promise.all(Array.from({ length: 8 }, worker));
const c = process.cpuUsage(c0);
console.log(`CPU ${((c.user + c.system) / N).toFixed(0)} µs/POST`);
let tot = 0n;
for (const [k, s] of [...stats].sort((a, b) => Number(b[1].ns - a[1].ns)).slice(0, 14)) { tot += s.ns; console.log(`${(Number(s.ns) / 1000 / N).toFixed(1).padStart(6)} µs/POST  n/POST ${(s.n / N).toFixed(2)}  ${k}`); }
let all = 0n; for (const s of stats.values()) all += s.ns;
console.log(`total SQL ${(Number(all) / 1000 / N).toFixed(1)} µs/POST`);
await service.app.close();
