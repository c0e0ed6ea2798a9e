import { Command, InvalidArgumentError } from 'commander';
import { VIGIL_VERSION } from '@vigil/platform';
import { runUntilSignal, startGate, startObserve, type ServeOptions } from './serve.ts';

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

program
  .command('observe')
  .description('run the observe service (default port 3400)')
  .option('--port <port>', 'port to listen on (env OBSERVE_PORT)', portOption)
  .option('--data-dir <dir>', 'directory for the SQLite database (env DATA_DIR)')
  .action(async (options: ServeOptions) => {
    await runUntilSignal(async () => [await startObserve(options)], shutdownTimeoutMs);
  });

program
  .command('gate')
  .description('run the gate approval service (default port 3000)')
  .option('--port <port>', 'port to listen on (env GATE_PORT)', portOption)
  .option('--data-dir <dir>', 'directory for the SQLite database (env DATA_DIR)')
  .action(async (options: ServeOptions) => {
    await runUntilSignal(async () => [await startGate(options)], shutdownTimeoutMs);
  });

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
