import assert from 'node:assert/strict';
import { ManualClock } from '@vigil/platform';
import type { TestBackend } from '@vigil/platform/testing';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { buildGateService, type GateService } from './app.ts';
import { auditEntryHash, chainEntryOf } from './stored-formats/index.ts';
import { SCOPES, type Scope } from './auth/index.ts';
import { gateConfigFromEnvironment, type GateConfig } from './config.ts';
import type { GateDatabase } from './schema.ts';

// Internals the cross-service tests of packages/cli drive directly (migrations and the first admin key under concurrency).
export { bootstrapAdminKey } from './auth/keys.ts';
export { gateMigrations } from './migrations.ts';
export type { GateSchema } from './schema.ts';

export const TEST_ADMIN_KEY = 'gk_test_admin_key_0123456789abcdef';

/** Both chat platforms configured (APIs unreachable): their interaction routes exist, for tests that walk every route. */
export const CHAT_CONFIGURED_ENV: Record<string, string> = {
  SLACK_BOT_TOKEN: 'xoxb-test',
  SLACK_SIGNING_SECRET: 'slack-signing-secret',
  SLACK_CHANNEL_ID: 'C0APPROVALS',
  SLACK_API_URL: 'http://127.0.0.1:9/api/',
  DISCORD_BOT_TOKEN: 'discord-bot-token',
  DISCORD_PUBLIC_KEY: 'a'.repeat(64),
  DISCORD_CHANNEL_ID: '1100000000000000001',
  DISCORD_API_URL: 'http://127.0.0.1:9/api/v10',
};

export interface TestGate {
  service: GateService;
  config: GateConfig;
  clock: ManualClock;
  /** Request through the real app with the given key (default: the admin key). */
  call(options: InjectOptions, key?: string): Promise<LightMyRequestResponse>;
  /** Creates a key over HTTP and returns its raw value. */
  createKey(scopes: string[], rateLimit?: number | null, name?: string): Promise<string>;
  /** One key per scope, each holding that scope alone (named `only-<scope>`). */
  keyPerScope(): Promise<Map<Scope, string>>;
  /** The id of the API key behind a raw key or session token (asked of who-am-I). */
  keyIdOf(credential: string): Promise<string>;
  close(): Promise<void>;
}

export interface TestGateOptions {
  env?: Record<string, string>;
  clock?: ManualClock;
  /** Another gate's database (a second instance, or a restart): default a fresh one. */
  database?: GateConfig['database'];
}

/** The real gate app on a fresh database of the given backend, with GATE_ADMIN_KEY installed. */
export async function startTestGate(backend: TestBackend, options: TestGateOptions = {}): Promise<TestGate> {
  const { dataDir, ...fresh } = backend.freshDatabase();
  const base = gateConfigFromEnvironment({ LOG_LEVEL: 'silent', GATE_ADMIN_KEY: TEST_ADMIN_KEY, ...options.env }, { dataDir });
  const config: GateConfig = { ...base, database: options.database ?? fresh };
  const clock = options.clock ?? new ManualClock(Date.parse('2026-11-22T10:00:00.000Z'));
  const service = await buildGateService(config, { clock, runJobs: false, validateResponses: true });
  const call = (request: InjectOptions, key = TEST_ADMIN_KEY) =>
    service.app.inject({ ...request, headers: { authorization: `Bearer ${key}`, ...request.headers } });
  const createKey: TestGate['createKey'] = async (scopes, rateLimit = null, name = `key-${scopes.join('+')}`) => {
    const response = await call({ method: 'POST', url: '/api/api-keys', payload: { name, scopes, rateLimit } });
    if (response.statusCode !== 201) throw new Error(`key creation failed: ${response.body}`);
    return (response.json() as { key: string }).key;
  };
  return {
    service,
    config,
    clock,
    call,
    createKey,
    async keyPerScope() {
      const keys = new Map<Scope, string>();
      for (const scope of SCOPES) keys.set(scope, await createKey([scope], null, `only-${scope}`));
      return keys;
    },
    async keyIdOf(credential) {
      const response = await call({ method: 'GET', url: '/api/dashboard/sessions/current' }, credential);
      if (response.statusCode !== 200) throw new Error(`who-am-I failed: ${response.body}`);
      return (response.json() as { keyId: string }).keyId;
    },
    close: () => service.app.close(),
  };
}

/** Asserts a gate error body `{error: {code, message}}` with this status and code; answers the message. */
export function assertGateError(response: LightMyRequestResponse, status: number, code: string, context = ''): string {
  assert.equal(response.statusCode, status, `${context}: ${response.statusCode} ${response.body}`);
  const body = response.json() as { error: { code: string; message: string } };
  assert.equal(typeof body.error, 'object', `${context}: ${response.body}`);
  assert.equal(body.error.code, code, context);
  assert.equal(typeof body.error.message, 'string', context);
  assert.ok(body.error.message.length > 0, context);
  return body.error.message;
}

/**
 * What an attacker who knows the published recipe does after editing a request's audit entries in
 * the database: recomputes every hash and prevHash of the request's chain and its recorded head, so
 * the chain itself verifies again (only the audit log's leaves can tell).
 */
export async function relinkAuditChain(database: GateDatabase, requestId: string): Promise<void> {
  const rows = await database.db.selectFrom('audit_entries').selectAll().where('request_id', '=', requestId).orderBy('seq').execute();
  let previous: string | null = null;
  for (const row of rows) {
    const hash = auditEntryHash(chainEntryOf(row), previous);
    if (hash !== row.hash || row.prev_hash !== previous)
      await database.db.updateTable('audit_entries').set({ hash, prev_hash: previous }).where('id', '=', row.id).execute();
    previous = hash;
  }
  await database.db
    .updateTable('requests')
    .set({ audit_head_seq: rows.length === 0 ? -1 : rows.at(-1)!.seq, audit_head_hash: previous })
    .where('id', '=', requestId)
    .execute();
}

/** Every table's rows as one text (SQLite: JSON; PostgreSQL: each row cast to text). */
export async function everyTableText(gate: TestGate): Promise<string> {
  const { db, dialect } = gate.service.context.database;
  const texts: string[] = [];
  if (dialect === 'sqlite') {
    const tables = await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`.execute(db);
    for (const { name } of tables.rows) texts.push(JSON.stringify((await sql`select * from ${sql.table(name)}`.execute(db)).rows));
  } else {
    const schema = (gate.config.database as { schema: string }).schema;
    const tables = await sql<{
      name: string;
    }>`select table_name as name from information_schema.tables where table_schema = ${schema} and table_type = 'BASE TABLE'`.execute(db);
    for (const { name } of tables.rows)
      texts.push(...(await sql<{ row: string }>`select t::text as row from ${sql.table(name)} t`.execute(db)).rows.map((r) => r.row));
  }
  return texts.join('\n');
}
