/**
 * `npm run bench`: every part in turn, each in its own process (bench/<part>.ts), each printing its
 * table. Arguments go to every part: `npm run bench -- --url <observe> --key <key>` and/or
 * `--gate-url <gate> --gate-key <key>` run only the observe and gate workloads, against those
 * servers (see server.ts remoteTargets); the other parts need servers of their own.
 */
import { spawnSync } from 'node:child_process';
import { remoteMode, remoteTargets } from './server.ts';

const args = process.argv.slice(2);
const targets = remoteTargets(args);
const parts = remoteMode(targets)
  ? [...(targets.observe ? ['ingest-and-query'] : []), ...(targets.gate ? ['gate'] : [])]
  : [
      'ingest-and-query',
      'gate',
      'sdk',
      'adapters',
      'framework-approvals',
      'otlp',
      'audit',
      'evidence',
      'redaction',
      'encryption',
      'erasure',
      'gate-erasure',
      'memory',
      'mcp',
      'analytics-current-hour',
      'multi-writer',
      'checkpoint-lag',
      'budgets',
      'compare-align',
      'dashboard-render',
    ];
for (const part of parts) {
  const { status } = spawnSync(process.execPath, ['--import', 'tsx', `bench/${part}.ts`, ...args], { stdio: 'inherit' });
  if (status !== 0) process.exit(status ?? 1);
}
