// `npm run build -w @vigil/dashboard`: the dashboard's build as `vigil up` does it (src/dashboard-build.ts):
// only when a source changed, never taking dist/ away from an observe serving it meanwhile.
import { ensureDashboardBuilt } from '../src/dashboard-build.ts';

const outcome = await ensureDashboardBuilt();
if (outcome.result === 'fresh') process.stdout.write('packages/dashboard/dist is up to date\n');
else if (outcome.result === 'built') process.stdout.write(`packages/dashboard/dist built in ${outcome.ms} ms\n`);
else {
  process.stderr.write(`packages/dashboard/dist: ${outcome.reason}\n`);
  process.exitCode = 1;
}
