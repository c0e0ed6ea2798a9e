import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { after, describe } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import type { DatabaseConfig } from './config.ts';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import assert from 'node:assert/strict';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import type { AdminChange, AdminChangePage } from './change-log.ts';
import { openApiPath, type RouteEntry } from './http.ts';
import { postgresReachable, serviceSkip, TEST_POSTGRES_URL } from './test-services.ts';
import { sql, type Kysely } from 'kysely';
import type { Database, DialectName, MigrationDb, MigrationStep } from './db.ts';
import { addKeyCertificates, addLeafKinds, AuditLog, createAuditLogTables, type AuditLogOptions, type AuditLogTables } from './audit-log.ts';
import { loadSigningKey } from './audit-keys.ts';
import { systemClock } from './clock.ts';
import { hashHexSql, storeHashesAsBytes } from './stored-hash.ts';
import { byScope, headBucketHash, headBucketOf, headEntryText, HeadMapTree, headsLeafText, parseHeadsLeaf } from './audit-heads-format.ts';
import { leafHash } from './merkle.ts';

export * from './test-services.ts';
export * from './prometheus-text.ts';
export * from './replica-pair.ts';

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

/** SQLite alone, for suites whose subject is not the database (each database would only repeat them). */
export const sqliteBackend: TestBackend = {
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
  const skip = serviceSkip(`PostgreSQL at ${TEST_POSTGRES_URL}`, await postgresReachable());
  describe(`${title} [sqlite]`, () => suite(sqliteBackend));
  describe(`${title} [postgres]`, { skip }, () => suite(postgresBackend));
}

/** A request as a test HTTP server received it. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/**
 * A URL nothing answers: port 9 (discard) lies below the ephemeral range, so no test server can be
 * handed it. A port freed by stopping a server is not safe: a server started meanwhile by a parallel
 * test may be given it (a Slack "down" test once reached such a server and saw its post delivered).
 */
export const REFUSED_URL = 'http://127.0.0.1:9';

export type Handler = (request: ReceivedRequest, res: ServerResponse) => void;

/**
 * A real HTTP server on an ephemeral local port, for tests of outbound calls (webhooks,
 * notifications, embeddings backend, memory server). Records every request; the handler can be swapped between tests.
 */
export class TestHttpServer {
  readonly requests: ReceivedRequest[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;
  port = 0;

  constructor(public handler: Handler) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
        this.requests.push(received);
        this.handler(received, res);
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * A webhook receiver that answers 503 to the first attempt of every delivery under `flakyPrefix`
 * (attempts of one delivery share the value of `deliveryHeader`) and 200 to everything else, so
 * each delivery there needs one retry. `received(prefix)` lists what arrived under a URL prefix,
 * `succeeded(prefix)` what was answered 200.
 */
export function failingFirstReceiver(flakyPrefix: string, deliveryHeader: string) {
  const answers = new Map<ReceivedRequest, number>();
  const seen = new Set<string>();
  const server = new TestHttpServer((request, res) => {
    let status = 200;
    if (request.url.startsWith(flakyPrefix)) {
      const id = String(request.headers[deliveryHeader]);
      if (!seen.has(id)) status = 503;
      seen.add(id);
    }
    answers.set(request, status);
    res.writeHead(status).end();
  });
  const received = (prefix: string) => server.requests.filter((r) => r.url.startsWith(prefix));
  const succeeded = (prefix: string) => received(prefix).filter((r) => answers.get(r) === 200);
  return { server, received, succeeded };
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** The request as a client sends it that puts `Content-Type: application/json` on every call, body or not (the AgentGate SDK does). */
export function withJsonContentType(request: InjectOptions): InjectOptions {
  return { ...request, headers: { 'content-type': 'application/json', ...request.headers } };
}

/** Reads a service's admin-change log through `call` (a request made as an admin key): one page, and one resource's history oldest first. */
export function adminChangeReader(call: (request: InjectOptions) => Promise<LightMyRequestResponse>) {
  const changes = async (query = ''): Promise<AdminChangePage> => {
    const response = await call({ method: 'GET', url: `/api/audit/changes${query}` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as AdminChangePage;
  };
  const historyOf = async (resourceId: string): Promise<AdminChange[]> => (await changes(`?resourceId=${resourceId}`)).entries.reverse();
  return { changes, historyOf };
}

/** Asserts that `entry` records `action` on `resource`, made by the named API key `admin`, at a real time. */
export function assertChangeBy(entry: AdminChange | undefined, resource: string, action: string, admin: { name: string; id: string }): asserts entry {
  assert.ok(entry, `${resource} ${action}: no entry`);
  assert.equal(entry.resource, resource);
  assert.equal(entry.action, action);
  assert.equal(entry.actor, `api:${admin.name}`);
  assert.equal(entry.actorKeyId, admin.id);
  assert.equal(entry.actorKeyName, admin.name);
  assert.ok(Number.isFinite(Date.parse(entry.timestamp)));
}

interface DocumentedResponse {
  content?: Record<string, { schema?: { $ref?: string } }>;
}

export interface OpenApiPaths {
  paths: Record<string, Record<string, { operationId?: string; responses?: Record<string, DocumentedResponse> }>>;
}

export interface OpenApiCoverage {
  /** The component every error response refers to, e.g. `ObserveError`. */
  errorSchema: string;
  /** URLs (every method) or `METHOD /url`s left out of the document on purpose, with the reason. */
  undocumented: Record<string, string>;
  /** The error statuses the route must list. */
  requiredErrors(route: RouteEntry): number[];
  /** `METHOD /url status` answered with a body of the route's own instead of the error body. */
  ownErrorBodies?: string[];
}

const OPERATION_ID = /^[a-z][A-Za-z0-9]*$/;

/**
 * What a service's OpenAPI document gets wrong about its routes, one line per problem that says
 * what to change: a route missing from the document, an operation without a camelCase operationId
 * or with one another operation has, or whose name is not the one its route declares, an error
 * status not listed or not in the error schema.
 */
export function openApiCoverageProblems(routeTable: readonly RouteEntry[], document: OpenApiPaths, coverage: OpenApiCoverage): string[] {
  const problems: string[] = [];
  const owners = new Map<string, string[]>();
  const errorRef = `#/components/schemas/${coverage.errorSchema}`;
  for (const route of routeTable) {
    const id = `${route.method} ${route.url}`;
    if (route.url in coverage.undocumented || id in coverage.undocumented) continue;
    const path = openApiPath(route.url);
    const operation = document.paths[path]?.[route.method.toLowerCase()];
    if (operation === undefined) {
      problems.push(`${id} is not in the OpenAPI document: give it a schema (or list its URL as undocumented in the test, with why)`);
      continue;
    }
    const name = operation.operationId;
    if (name === undefined || !OPERATION_ID.test(name)) {
      problems.push(
        `${id} has ${name === undefined ? 'no operationId' : `operationId "${name}", not camelCase`}: give it schema.operationId (camelCase) where it is registered`,
      );
    } else if (name !== route.operationId) {
      problems.push(
        `${id}: the document names it "${name}", its route declares ${route.operationId === undefined ? 'no operationId' : `"${route.operationId}"`}`,
      );
    } else {
      owners.set(name, [...(owners.get(name) ?? []), id]);
    }
    const responses = operation.responses ?? {};
    for (const status of coverage.requiredErrors(route)) {
      if (responses[status] === undefined) problems.push(`${id} does not list its ${status} response`);
    }
    for (const [status, response] of Object.entries(responses)) {
      if (Number(status) < 400 || coverage.ownErrorBodies?.includes(`${id} ${status}`)) continue;
      const ref = response.content?.['application/json']?.schema?.$ref;
      if (ref !== errorRef) problems.push(`${id} answers ${status} with ${ref ?? 'an inline schema'} instead of ${errorRef}`);
    }
  }
  for (const [name, ids] of owners) {
    if (ids.length > 1) problems.push(`operationId "${name}" is shared by ${ids.join(' and ')}: each needs its own`);
  }
  return problems;
}

/**
 * What the routes of an app fail to declare where they are registered, one line per route: a
 * documented route without a camelCase operationId (or with one another route has), a route that
 * takes an API key without a scope. The HTTP kit refuses such routes at registration; this walk is
 * what each service's tests assert over its whole route table.
 */
export function routeDeclarationProblems(routeTable: readonly RouteEntry[]): string[] {
  const problems: string[] = [];
  const owners = new Map<string, string>();
  for (const route of routeTable) {
    const id = `${route.method} ${route.url}`;
    if (route.takesKey && route.scope === undefined) problems.push(`${id} takes an API key but declares no scope`);
    if (!route.documented) continue;
    const name = route.operationId;
    if (name === undefined || !OPERATION_ID.test(name)) problems.push(`${id} is documented without a camelCase operationId (${name ?? 'none'})`);
    else if (owners.has(name)) problems.push(`${id} and ${owners.get(name)} are both named "${name}"`);
    else owners.set(name, id);
  }
  return problems;
}

/** A query parameter no route takes: what the walk of unknownQueryProblems sends. */
export const UNKNOWN_QUERY_PARAMETER = 'vigilNoSuchFilter';

/**
 * Every documented GET operation called with a query parameter it does not take: each that does
 * not answer 400 naming the parameter is a problem (a misspelt filter must never widen an answer).
 * Path parameters are filled with `x`; `call` authenticates (an admin credential).
 */
export async function unknownQueryProblems(document: OpenApiPaths, call: (request: InjectOptions) => Promise<LightMyRequestResponse>): Promise<string[]> {
  const problems: string[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    if (methods.get === undefined) continue;
    const url = `${path.replace(/\{[^}]+\}/g, 'x')}?${UNKNOWN_QUERY_PARAMETER}=1`;
    // A route that takes the request (the event stream) would never answer: it is reported instead of awaited.
    const deadline = new AbortController();
    const response = await Promise.race([call({ method: 'GET', url }), delay(5000, undefined, { signal: deadline.signal }).catch(() => undefined)]).finally(
      () => deadline.abort(),
    );
    if (response === undefined) problems.push(`GET ${path} did not answer ${UNKNOWN_QUERY_PARAMETER} within 5 s`);
    else if (response.statusCode !== 400) problems.push(`GET ${path} answered ${response.statusCode} to ${UNKNOWN_QUERY_PARAMETER}, not 400`);
    else if (!response.body.includes(UNKNOWN_QUERY_PARAMETER)) problems.push(`GET ${path}: the 400 does not name ${UNKNOWN_QUERY_PARAMETER}: ${response.body}`);
  }
  return problems;
}

/**
 * The routes of a service that neither the generated reference nor docs/api.md shows, one line
 * each: the reference is built from the OpenAPI document, so a route left out of it (the document
 * itself, /metrics, forwarders, the dashboard) must be named in docs/api.md, in backticks.
 */
export function unreferencedRoutes(routeTable: readonly RouteEntry[], conventions: string): string[] {
  return routeTable
    .filter((route) => !route.documented && !conventions.includes(`\`${route.url}\``) && !conventions.includes(`\`${route.method} ${route.url}\``))
    .map((route) => `${route.method} ${route.url} is not in the OpenAPI document, and docs/api.md does not name it`);
}

/** Back to a database from before its audit log: every table of the log dropped (migration tests re-run the step after). */
export async function dropAuditLogTables(db: Pick<Kysely<unknown>, 'schema'>): Promise<void> {
  const tables = [
    'audit_log_head',
    'audit_log_built',
    'audit_log_leaves',
    'audit_log_nodes',
    'audit_checkpoints',
    'audit_keys',
    'audit_tombstones',
    'audit_witness_deliveries',
    'audit_cosignatures',
  ];
  for (const table of tables) await db.schema.dropTable(table).execute();
}

/** Back to hashes stored as hex text (before storeHashesAsBytes): migration tests then re-run the conversion. */
export async function storeHashesAsHex(db: MigrationDb, dialect: DialectName, table: string, columns: readonly string[]): Promise<void> {
  if (dialect === 'postgres') {
    await sql.raw(`alter table ${table} ${columns.map((column) => `alter column ${column} type text using encode(${column}, 'hex')`).join(', ')}`).execute(db);
    return;
  }
  await sql`update ${sql.table(table)} set ${sql.join(columns.map((column) => sql`${sql.ref(column)} = ${hashHexSql(dialect, column)}`))}`.execute(db);
}

/**
 * The heads leaf a checkpoint of `treeSize` leaves must end with (docs/audit.md, "Session heads"),
 * recomputed from the scopes' recorded heads as GET /api/audit/heads lists them (under `scopes`,
 * each with `scopeField`), and checked against the leaf the service stored: answers its leaf hash.
 */
export async function expectedHeadsLeaf(
  db: Kysely<unknown>,
  log: string,
  treeSize: number,
  heads: readonly Record<string, unknown>[],
  scopeField: string,
): Promise<Buffer> {
  const { rows } = await sql<{ body: string }>`select body from audit_head_maps where leaf_idx = ${treeSize - 1}`.execute(db);
  // The bucket count is the map's own (it grows with the scopes); the leaf must still commit these heads under it.
  const count = parseHeadsLeaf(rows[0]?.body ?? '', log)?.buckets;
  assert.ok(count !== undefined, `leaf ${treeSize - 1} is a heads leaf of ${log}`);
  const buckets = new Map<number, { scopeId: string; text: string }[]>();
  for (const head of heads) {
    const scopeId = head[scopeField] as string;
    if ((head.headSeq as number) < 0) continue;
    const bucket = headBucketOf(scopeId, count);
    if (!buckets.has(bucket)) buckets.set(bucket, []);
    buckets.get(bucket)!.push({ scopeId, text: headEntryText(scopeId, { seq: head.headSeq as number, hash: head.headHash as string | null }) });
  }
  const hashes = new Map([...buckets].map(([bucket, entries]) => [bucket, headBucketHash(entries.sort(byScope).map((entry) => entry.text))]));
  const body = headsLeafText(log, treeSize - 1, new HeadMapTree(count, hashes).root, count);
  assert.equal(rows[0]?.body, body, `leaf ${treeSize - 1} commits every recorded head`);
  return leafHash(Buffer.from(body, 'utf8'));
}

/** The audit log's tables as a service's migrations make them: the log, its hashes as bytes, its leaves' kinds. */
export const AUDIT_LOG_TEST_STEPS: Readonly<Record<string, MigrationStep>> = {
  '0001_audit_log': createAuditLogTables,
  async '0002_binary_hashes'(db, dialect) {
    await storeHashesAsBytes(db, dialect, 'audit_log_leaves', ['leaf_hash']);
    await storeHashesAsBytes(db, dialect, 'audit_log_nodes', ['hash']);
  },
  async '0003_leaf_kinds'(db) {
    // The tables the backfill reads (a service's change log, its keys' certificates).
    await db.schema.createTable('admin_changes').addColumn('id', 'text').execute();
    await addKeyCertificates(db);
    await addLeafKinds(db, 'item');
  },
};

/** A log over a test database: its key in `dataDir`, no witnesses, nothing logged, checkpoints only when asked; `options` override. */
export function testAuditLog(
  database: Database<AuditLogTables>,
  dataDir: string,
  options: Partial<AuditLogOptions<AuditLogTables>> = {},
): AuditLog<AuditLogTables> {
  return new AuditLog({
    name: 'vigil-test',
    db: database.db,
    dialect: database.dialect,
    key: loadSigningKey(undefined, dataDir),
    clock: systemClock,
    witnesses: { urls: [], timeoutMs: 1000 },
    checkpointEvents: 1_000_000,
    log: { warn() {}, error() {} },
    ...options,
  });
}
