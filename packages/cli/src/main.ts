import { createRequire } from 'node:module';
import { Command, InvalidArgumentError } from 'commander';
import { registerEvalGate } from './eval-gate.ts';
import type { RunningService, ServeOptions } from './serve.ts';

// The services (and @vigil/platform's database and HTTP stack) load on demand, so commands that
// only talk HTTP, like eval-gate, start in a fraction of the time. The version is read from the
// same root package.json as @vigil/platform's VIGIL_VERSION.
const serve = () => import('./serve.ts');
const { version: VIGIL_VERSION } = createRequire(import.meta.url)('../../../package.json') as { version: string };

function portOption(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgumentError('must be a port number (0-65535)');
  return port;
}

const shutdownTimeoutMs = Number(process.env.SHUTDOWN_TIMEOUT_MS ?? 10_000) || 10_000;

const program = new Command()
  .name('vigil')
  .description('Vigil: keeps watch over AI agents (observe: events and audit chains; gate: approvals)')
  .version(VIGIL_VERSION);

function serviceCommand(name: string, description: string, portVariable: string, start: (options: ServeOptions) => Promise<RunningService>): void {
  program
    .command(name)
    .description(description)
    .option('--port <port>', `port to listen on (env ${portVariable})`, portOption)
    .option('--data-dir <dir>', 'directory for the SQLite database (env DATA_DIR)')
    .action(async (options: ServeOptions) => {
      const { runUntilSignal } = await serve();
      await runUntilSignal(async () => [await start(options)], shutdownTimeoutMs);
    });
}

serviceCommand('observe', 'run the observe service (default port 3400)', 'OBSERVE_PORT', async (options) => (await serve()).startObserve(options));
serviceCommand('gate', 'run the gate approval service (default port 3000)', 'GATE_PORT', async (options) => (await serve()).startGate(options));

program
  .command('up')
  .description('run every Vigil service with its defaults (what `npm start` runs)')
  .option('--data-dir <dir>', 'directory for the SQLite databases (env DATA_DIR)')
  .action(async (options: { dataDir?: string }) => {
    const { runUntilSignal, startGate, startObserve } = await serve();
    await runUntilSignal(async () => {
      const observe = await startObserve({ dataDir: options.dataDir });
      try {
        return [observe, await startGate({ dataDir: options.dataDir })];
      } catch (error) {
        await observe.close();
        throw error;
      }
    }, shutdownTimeoutMs);
  });

registerEvalGate(program);
program.command('mcp').description('MCP server on stdio: log to and query observe, create and decide gate approvals (env VIGIL_URL, VIGIL_API_KEY, VIGIL_GATE_URL, VIGIL_GATE_API_KEY)').action(async () => (await import('./mcp.ts')).runMcpServer());

await program.parseAsync(process.argv);
