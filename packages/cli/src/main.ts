import { createRequire } from 'node:module';
import { Command, InvalidArgumentError, type CommanderError } from 'commander';
import { registerEvalGate } from './eval-gate.ts';
import { liveProgressWanted } from './eval-gate-core.ts';
import type { RunningService, ServeOptions } from './serve.ts';
import type { VerifyOptions } from './verify/command.ts';

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
    const { linkedServicesEnvironment } = await import('./linked-services.ts');
    await runUntilSignal(async () => {
      const env = linkedServicesEnvironment(process.env, options.dataDir ?? process.env.DATA_DIR ?? './data');
      const observe = await startObserve({ dataDir: options.dataDir, env });
      try {
        return [observe, await startGate({ dataDir: options.dataDir, env })];
      } catch (error) {
        await observe.close();
        throw error;
      }
    }, shutdownTimeoutMs);
  });

registerEvalGate(program);
program
  .command('verify')
  .description(
    'verify an audit export bundle offline, or audit the whole audit log of observe or the gate with --url (exit 0 valid, 1 tampered, 2 usage or unreadable input, 3 no finding but no trusted key: pass --public-key or --checkpoint); `vigil verify receipt FILE --public-key KEY` checks an approval receipt, `vigil verify erasure-receipt FILE --public-key KEY` the deletion receipt of an erasure (exit 0 valid, 1 invalid, 2 usage); `vigil verify evidence FILE --public-key KEY` checks an evidence pack offline (exit 0 valid, 1 a part fails, named, 2 usage or unreadable, 3 intact but no trusted key)',
  )
  .argument('[bundle]', 'an export bundle (GET /api/audit/export) to verify, or `receipt` / `erasure-receipt` / `evidence`')
  .argument(
    '[file]',
    'after `evidence`: the evidence pack (vigil evidence); after `receipt`: the approval receipt (GET /api/requests/:id/receipt) to verify (after `erasure-receipt`: the answer of DELETE /api/subjects/:id); --public-key is the gate key, or a file of GET /api/audit/public-key',
  )
  .option('--checkpoint <file>', 'a checkpoint saved earlier (as GET /api/audit/checkpoint answers): the log must be consistent with it; its key is trusted')
  .option('--public-key <key>', 'the audit key you trust: base64 of the raw Ed25519 key, a PEM, or a file holding either')
  .option('--url <url>', 'observe or gate server: fetch consistency proofs, or audit the whole log when no bundle is given (API key: env VIGIL_API_KEY)')
  .option('--deep', 'also recompute derived data from the chained events (whole-log audit of observe; the gate has none)')
  .option('--json', 'print the verdict as one JSON document')
  .option(
    '--witness <key>',
    "a witness whose cosignatures count (its verifier key, name+hash+base64; repeatable; with --url): the server's latest checkpoint note must carry --min-witnesses valid ones",
    (value: string, previous: string[] = []) => [...previous, value],
  )
  .option('--min-witnesses <k>', 'how many of the --witness keys must have cosigned (default: all of them); fewer exits 1 (verdict unwitnessed)')
  .exitOverride((error: CommanderError) => {
    // Commander's own errors (unknown option, missing value) are usage errors: exit 2.
    if (error.exitCode === 0) process.exit(0);
    if (error.code === 'commander.unknownOption' && /--api-key/.test(error.message)) {
      process.stderr.write('the API key is read only from the VIGIL_API_KEY environment variable, never from a flag\n');
    }
    process.exit(2);
  })
  .action(async (bundle: string | undefined, file: string | undefined, options: VerifyOptions) => {
    const io = {
      out: (text: string) => process.stdout.write(text),
      err: (text: string) => process.stderr.write(text),
      live: liveProgressWanted(process.stderr.isTTY, process.env),
    };
    if (bundle === 'evidence') {
      if (file === undefined) {
        process.stderr.write('usage: vigil verify evidence FILE [--public-key KEY] [--checkpoint SAVED]\n');
        process.exitCode = 2;
        return;
      }
      const { runVerifyEvidence } = await import('./evidence/verify.ts');
      process.exitCode = await runVerifyEvidence(
        file,
        {
          publicKey: options.publicKey === undefined ? [] : [options.publicKey],
          checkpoint: options.checkpoint === undefined ? [] : [options.checkpoint],
          json: options.json,
        },
        io,
      );
      return;
    }
    if (bundle === 'erasure-receipt') {
      if (file === undefined) {
        process.stderr.write('usage: vigil verify erasure-receipt FILE --public-key KEY\n');
        process.exitCode = 2;
        return;
      }
      const { runVerifyErasureReceipt } = await import('./verify/erasure-receipt.ts');
      process.exitCode = await runVerifyErasureReceipt(file, options, process.env, io);
      return;
    }
    if (bundle === 'receipt' || file !== undefined) {
      if (bundle !== 'receipt' || file === undefined) {
        process.stderr.write('usage: vigil verify receipt FILE [--public-key KEY]\n');
        process.exitCode = 2;
        return;
      }
      const { runVerifyReceipt } = await import('./verify/receipt.ts');
      process.exitCode = await runVerifyReceipt(file, options, process.env, io);
      return;
    }
    const { runVerify } = await import('./verify/command.ts');
    process.exitCode = await runVerify(bundle, options, process.env, io);
  });
program
  .command('evidence')
  .description(
    'write a signed evidence pack of a period (docs/audit.md, "Evidence packs"): checkpoints with cosignatures and consistency proofs, continuity, human oversight, incidents, change logs, retention receipts, inventory, controls matrix and an HTML report; each service signs the manifest (API keys: env VIGIL_API_KEY for observe, VIGIL_GATE_API_KEY for the gate, admin scope); check it with `vigil verify evidence FILE`',
  )
  .requiredOption('--from <time>', 'start of the period (ISO 8601)')
  .requiredOption('--to <time>', 'end of the period (ISO 8601, inclusive)')
  .requiredOption('--out <file>', 'where to write the pack (JSON lines)')
  .option('--agent <id>', 'only this agent (repeatable)', (value: string, previous: string[] = []) => [...previous, value])
  .option('--url <url>', 'the observe server')
  .option('--gate-url <url>', 'the gate server')
  .option('--interval-ms <ms>', 'the configured checkpoint interval (AUDIT_CHECKPOINT_INTERVAL_MS, default 60000): longer gaps are reported')
  .action(async (options: import('./evidence/build.ts').EvidenceOptions) => {
    const { runEvidence } = await import('./evidence/build.ts');
    process.exitCode = await runEvidence(options, process.env, { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) });
  });
program
  .command('witness')
  .description(
    'a transparency-log witness (c2sp.org/tlog-witness): POST /add-checkpoint cosigns a checkpoint of a log it follows once its signature and consistency proof verify (409 with its size on a rollback or a stale old size, 422 on a failed proof); prints one JSON line with its URL and verifier key (env WITNESS_SIGNING_KEY, else a key created in the data directory)',
  )
  .requiredOption(
    '--config <file>',
    'JSON: {"name": "<witness key name>", "logs": [{"origin": "<checkpoint origin>", "key": "<log note verifier key>"}]} (docs/witness.md)',
  )
  .option('--port <port>', 'port to listen on (default 3500; 0 picks a free one)', portOption)
  .option('--host <host>', 'address to listen on (default 127.0.0.1)')
  .option('--data-dir <dir>', 'directory for the witness key and state (env DATA_DIR)')
  .action(async (options: { config: string; port?: number; host?: string; dataDir?: string }) =>
    (await import('./witness.ts')).runWitness(options, process.env),
  );
program
  .command('mcp')
  .description(
    'MCP server on stdio: log to and query observe, create and decide gate approvals (env VIGIL_URL, VIGIL_API_KEY, VIGIL_GATE_URL, VIGIL_GATE_API_KEY)',
  )
  .action(async () => (await import('./mcp.ts')).runMcpServer());
program
  .command('mcp-gateway')
  .description(
    'MCP gateway: serves the tools of upstream MCP servers (stdio commands or HTTP URLs) and puts every tool call behind the gate, recorded in observe (stdio, or Streamable HTTP at /mcp with --http; env VIGIL_GATEWAY_TOKEN: bearer token HTTP clients must send)',
  )
  .requiredOption('--config <file>', 'the gateway configuration (JSON: upstreams, gate, observe, agentId; see docs/guide/mcp-gateway.md)')
  .option('--http <port>', 'serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio', portOption)
  .option('--host <host>', 'address to listen on with --http (default 127.0.0.1)')
  .action(async (options: { config: string; http?: number; host?: string }) => (await import('./mcp-gateway/command.ts')).runMcpGateway(options));

await program.parseAsync(process.argv);
