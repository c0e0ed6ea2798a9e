import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * Tests of READ_DATABASE_URL: a PostgreSQL primary of its own and a streaming replica of it made
 * with pg_basebackup, each on a free port, in a temporary folder removed by `close`. The servers
 * run as the `postgres` user when the tests run as root (PostgreSQL refuses root).
 */
export interface ReplicaPair {
  primaryUrl: string;
  replicaUrl: string;
  /** Stops applying the primary's WAL on the replica (pg_wal_replay_pause): it then lags behind every later write. */
  pauseApplying(): Promise<void>;
  resumeApplying(): Promise<void>;
  /** Whether the replica has replayed everything the primary has written so far. */
  caughtUp(): Promise<boolean>;
  stopReplica(): void;
  close(): void;
}

/** Where the PostgreSQL server programs are, or null where there are none (the replica tests then skip). */
export function postgresBinaries(): string | null {
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
    return existsSync(join(dir, 'pg_basebackup')) && existsSync(join(dir, 'postgres')) ? dir : null;
  } catch {
    return null;
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function startReplicaPair(bin: string): Promise<ReplicaPair> {
  const root = mkdtempSync(join(tmpdir(), 'vigil-replica-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot)
    chownSync(root, Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })));
  const run = (program: string, args: string[]): void => {
    const [command, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, program), ...args]] : [join(bin, program), args];
    const result = spawnSync(command, argv as string[], { encoding: 'utf8', cwd: root });
    if (result.status !== 0) throw new Error(`${program} ${args.join(' ')} failed: ${result.stderr || result.stdout}`);
  };
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const primaryDir = join(root, 'primary');
  const replicaDir = join(root, 'replica');
  const serverConf = (port: number) =>
    `\nport = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${root}'\nfsync = off\nwal_level = replica\nmax_wal_senders = 4\nhot_standby = on\n`;
  let started: string[] = [];
  const close = (): void => {
    for (const dir of started.reverse())
      spawnSync(
        asRoot ? 'runuser' : join(bin, 'pg_ctl'),
        asRoot ? ['-u', 'postgres', '--', join(bin, 'pg_ctl'), '-D', dir, '-m', 'immediate', 'stop'] : ['-D', dir, '-m', 'immediate', 'stop'],
      );
    started = [];
    rmSync(root, { recursive: true, force: true });
  };
  try {
    run('initdb', ['-D', primaryDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    appendFileSync(join(primaryDir, 'postgresql.conf'), serverConf(primaryPort));
    appendFileSync(join(primaryDir, 'pg_hba.conf'), '\nhost replication all 127.0.0.1/32 trust\n');
    run('pg_ctl', ['-D', primaryDir, '-l', join(root, 'primary.log'), '-w', 'start']);
    started.push(primaryDir);
    run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', replicaDir, '-R', '-X', 'stream', '--no-sync']);
    appendFileSync(join(replicaDir, 'postgresql.conf'), serverConf(replicaPort));
    run('pg_ctl', ['-D', replicaDir, '-l', join(root, 'replica.log'), '-w', 'start']);
    started.push(replicaDir);
  } catch (error) {
    close();
    throw error;
  }
  const primaryUrl = `postgres://postgres@127.0.0.1:${primaryPort}/postgres`;
  const replicaUrl = `postgres://postgres@127.0.0.1:${replicaPort}/postgres`;
  const query = async (url: string, text: string): Promise<pg.QueryResult> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await client.query(text);
    } finally {
      await client.end();
    }
  };
  return {
    primaryUrl,
    replicaUrl,
    pauseApplying: async () => void (await query(replicaUrl, 'select pg_wal_replay_pause()')),
    resumeApplying: async () => void (await query(replicaUrl, 'select pg_wal_replay_resume()')),
    caughtUp: async () => {
      const target = (await query(primaryUrl, 'select pg_current_wal_lsn()::text as lsn')).rows[0].lsn as string;
      return (await query(replicaUrl, `select pg_last_wal_replay_lsn() >= '${target}'::pg_lsn as done`)).rows[0].done === true;
    },
    stopReplica: () => {
      run('pg_ctl', ['-D', replicaDir, '-m', 'immediate', 'stop']);
      started = started.filter((dir) => dir !== replicaDir);
    },
    close,
  };
}
