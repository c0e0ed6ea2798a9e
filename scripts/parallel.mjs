// Runs npm scripts side by side (`node scripts/parallel.mjs typecheck lint build`): npm test's checks
// and builds each use one core for minutes and need nothing of each other. Each script's output is
// printed whole when it ends, so the log reads as if they ran in turn; the exit status is non-zero
// when any of them failed.
import { spawn } from 'node:child_process';

const names = process.argv.slice(2);
if (names.length === 0) {
  console.error('usage: node scripts/parallel.mjs <npm script>…');
  process.exit(2);
}

const statuses = await Promise.all(
  names.map(
    (name) =>
      new Promise((resolve) => {
        const child = spawn('npm', ['run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'], shell: process.platform === 'win32' });
        const output = [];
        child.stdout.on('data', (chunk) => output.push(chunk));
        child.stderr.on('data', (chunk) => output.push(chunk));
        child.on('error', (error) => {
          console.error(`npm run ${name}: ${error.message}`);
          resolve(1);
        });
        child.on('close', (code, signal) => {
          process.stdout.write(`\n> npm run ${name}: ${code === 0 ? 'passed' : `failed (${signal ?? `exit ${code}`})`}\n`);
          process.stdout.write(Buffer.concat(output));
          resolve(code ?? 1);
        });
      }),
  ),
);
process.exit(statuses.some((status) => status !== 0) ? 1 : 0);
