import { Command, InvalidArgumentError } from 'commander';
import { VIGIL_VERSION } from '@vigil/platform';
import { runUntilSignal, startGate, startObserve, type RunningService, type ServeOptions } from './serve.ts';

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
      await runUntilSignal(async () => [await start(options)], shutdownTimeoutMs);
    });
}

serviceCommand('observe', 'run the observe service (default port 3400)', 'OBSERVE_PORT', startObserve);
serviceCommand('gate', 'run the gate approval service (default port 3000)', 'GATE_PORT', startGate);

program
  .command('up')
  .description('run every Vigil service with its defaults (what `npm start` runs)')
  .option('--data-dir <dir>', 'directory for the SQLite databases (env DATA_DIR)')
  .action(async (options: { dataDir?: string }) => {
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

await program.parseAsync(process.argv);
