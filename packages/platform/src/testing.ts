import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { after, describe } from 'node:test';
import pg from 'pg';
import type { DatabaseConfig } from './config.ts';

/** PostgreSQL used by the tests; trust auth on this machine and in CI. */
export const TEST_POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const servicesRequired = process.env.REQUIRE_SERVICES === '1';

let postgresReachable: Promise<boolean> | null = null;

async function probePostgres(): Promise<boolean> {
  const client = new pg.Client({ connectionString: TEST_POSTGRES_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface TestBackend {
  kind: DatabaseConfig['kind'];
  /** A fresh, empty database: a new SQLite file, or a new PostgreSQL schema. Removed after the file's tests. */
  freshDatabase(): DatabaseConfig & { dataDir: string };
}

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-test-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const sqliteBackend: TestBackend = {
  kind: 'sqlite',
  freshDatabase() {
    const dataDir = tempDir();
    return { kind: 'sqlite', file: join(dataDir, 'test.db'), synchronous: 'NORMAL', dataDir };
  },
};

const postgresBackend: TestBackend = {
  kind: 'postgres',
  freshDatabase() {
    const schema = `test_${randomBytes(6).toString('hex')}`;
    cleanups.push(async () => {
      const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    });
    return { kind: 'postgres', url: TEST_POSTGRES_URL, schema, dataDir: tempDir() };
  },
};

/**
 * Registers the same suite once per database: SQLite always, PostgreSQL when reachable. With
 * REQUIRE_SERVICES=1 (CI) an unreachable PostgreSQL fails the run instead of skipping.
 */
export async function describeEachDatabase(title: string, suite: (backend: TestBackend) => void): Promise<void> {
  postgresReachable ??= probePostgres();
  const reachable = await postgresReachable;
  if (!reachable && servicesRequired) {
    throw new Error(`REQUIRE_SERVICES=1 but PostgreSQL is not reachable at ${TEST_POSTGRES_URL}`);
  }
  describe(`${title} [sqlite]`, () => suite(sqliteBackend));
  describe(`${title} [postgres]`, { skip: reachable ? false : `PostgreSQL not reachable at ${TEST_POSTGRES_URL}` }, () =>
    suite(postgresBackend),
  );
}
