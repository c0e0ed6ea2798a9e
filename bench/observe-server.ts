/**
 * An observe server for benchmarks that need a build option the CLI does not offer:
 * BENCH_AUDIT_LEAVES=off starts it without appending audit-log leaves (ObserveOptions.auditLeaves),
 * to measure what the log costs ingest, and BENCH_AUDIT_HEADS=off without committing session heads at
 * checkpoints (ObserveOptions.auditHeads). Arguments: PORT DATA_DIR.
 */
import { buildObserveService, observeConfigFromEnvironment } from '@vigil/observe';

const [port, dataDir] = process.argv.slice(2);
const config = observeConfigFromEnvironment(process.env, { port: Number(port), dataDir });
const service = await buildObserveService(config, {
  auditLeaves: process.env.BENCH_AUDIT_LEAVES !== 'off',
  auditHeads: process.env.BENCH_AUDIT_HEADS !== 'off',
});
await service.app.listen({ host: '127.0.0.1', port: config.port });
process.once('SIGTERM', () => void service.app.close().then(() => process.exit(0)));
