// In-process: CPU per request of a few reads on a copy of the 1M database (this branch's code).
import { readFileSync } from 'node:fs';
import { buildObserveService } from './src/app.ts';
import { observeConfigFromEnvironment } from './src/config.ts';
const dir = process.env.PROF_DIR!;
const { key } = JSON.parse(readFileSync('/tmp/reads-bench/gen.json', 'utf8')) as { key: string };
const config = observeConfigFromEnvironment({ LOG_LEVEL: 'silent' }, { dataDir: dir });
const service = await buildObserveService(config, { runJobs: false });
const paths = (process.env.PROF_PATHS ?? '/api/stats:2000,/api/analytics/agents:300').split(',');
for (const spec of paths) {
  const i = spec.lastIndexOf(':');
  const path = spec.slice(0, i);
  const n = Number(spec.slice(i + 1));
  for (let k = 0; k < 20; k++) await service.app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${key}` } });
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let k = 0; k < n; k++) {
    const r = await service.app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${key}` } });
    if (r.statusCode !== 200) throw new Error(r.body);
  }
  const c = process.cpuUsage(c0);
  console.log(`${path.padEnd(40)} cpu ${((c.user + c.system) / 1000 / n).toFixed(3)} ms/req  wall ${((performance.now() - t0) / n).toFixed(3)} ms/req`);
}
await service.app.close();
