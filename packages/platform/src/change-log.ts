import type { Kysely, Transaction } from 'kysely';
import { z } from 'zod';
import { CHANGE_LEAF, type AuditLogTables } from './audit-log.ts';
import { canonicalJson, sha256, sha256Hex } from './crypto.ts';
import { epochMsType, tablesOf, type DdlTarget, type MigrationDb } from './db.ts';
import type { RouteScope, ZodApp } from './http.ts';
import { newId } from './ids.ts';
import { leafHash } from './merkle.ts';
import { isoTimestampMs, toIso } from './time.ts';
import { readNewestFirstPage, timeCursorSchema } from './time-pages.ts';

/**
 * The log of administrative changes (who created, changed, enabled, disabled, deleted or revoked an
 * administrative resource of a service). A service writes the row with `recordChange` in the
 * transaction of the change itself, so a change is never without its row nor a row without its
 * change. The kit knows no feature: each feature that records changes declares the resource name
 * it records them under, the service composes those names into its list (the `resource` filter of
 * its route) and its schema's row type (which `recordChange` checks), and snapshots are the service's.
 *
 * Every row is a leaf of the service's audit log (no chain: scope null), appended in the same
 * transaction, so a change row deleted or edited afterwards is a finding of `vigil verify`. A
 * feature that governs rows by the log (a row is honoured only as its last logged change left it,
 * logged-state.ts) passes the row's governed content as the change's `state`; its hash is recorded.
 */

/** A service's resource names, composed from its features' (at least one). */
export type ChangeResources<Resource extends string = string> = readonly [Resource, ...Resource[]];

export const CHANGE_ACTIONS = ['created', 'updated', 'enabled', 'disabled', 'deleted', 'revoked', 'breached'] as const;
export type ChangeAction = (typeof CHANGE_ACTIONS)[number];

export interface AdminChangeRow<Resource extends string = string> {
  id: string;
  ts: number;
  resource: Resource;
  resource_id: string | null;
  action: string;
  actor: string;
  actor_key_id: string | null;
  actor_key_name: string | null;
  /** Canonical JSON of the resource before and after the change (null on the created / deleted side). */
  before: string | null;
  after: string | null;
  /** SHA-256 (hex) of the canonical JSON of the governed row's content after the change (changeStateHash); null when the resource is not governed or the row is gone. */
  state_hash: string | null;
}

/** The table a service's schema includes to record changes, typed by the service's resource names. */
export interface AdminChangeTables<Resource extends string = string> {
  admin_changes: AdminChangeRow<Resource>;
}

/** The tables `recordChange` writes: the change rows and the audit log they are leaves of. */
export type ChangeLogTables = AdminChangeTables & AuditLogTables;

/** The resource names a schema's change log takes. */
export type ChangeResourceOf<Schema extends AdminChangeTables> = Schema['admin_changes']['resource'];

/**
 * Migration step body: the table and one index per filter of the list, each ending in (ts, id) so
 * a filtered page reads an index range in order and stops after `limit` rows.
 */
export async function createAdminChangeTable(db: DdlTarget): Promise<void> {
  await db.schema
    .createTable('admin_changes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('ts', epochMsType, (c) => c.notNull())
    .addColumn('resource', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('actor_key_id', 'text')
    .addColumn('actor_key_name', 'text')
    .addColumn('before', 'text')
    .addColumn('after', 'text')
    .execute();
  await db.schema.createIndex('admin_changes_ts').on('admin_changes').columns(['ts', 'id']).execute();
  await db.schema.createIndex('admin_changes_resource_ts').on('admin_changes').columns(['resource', 'ts', 'id']).execute();
  await db.schema.createIndex('admin_changes_resource_id_ts').on('admin_changes').columns(['resource_id', 'ts', 'id']).execute();
  await db.schema.createIndex('admin_changes_action_ts').on('admin_changes').columns(['action', 'ts', 'id']).execute();
  await db.schema.createIndex('admin_changes_key_ts').on('admin_changes').columns(['actor_key_id', 'ts', 'id']).execute();
}

/** Who made a change: the display name the service derives from the credential, and the API key behind it (null for the service itself). */
export interface ChangeActor {
  actor: string;
  keyId: string | null;
  keyName: string | null;
}

export const SYSTEM_CHANGE_ACTOR: ChangeActor = { actor: 'system', keyId: null, keyName: null };

/**
 * The actor of a change made with an API key: `api:<key name>`, as both services name a key's
 * holder, with the key's name at that time; `anonymous` without a key (authentication disabled).
 */
export function keyChangeActor(key: { id: string; name: string } | null): ChangeActor {
  return key ? { actor: `api:${key.name}`, keyId: key.id, keyName: key.name } : { actor: 'anonymous', keyId: null, keyName: null };
}

/** A resource as its service shows it (its public shape, which holds no secret). */
export type Snapshot = object;

export interface Change<Resource extends string = string> {
  resource: Resource;
  resourceId: string | null;
  action: ChangeAction;
  actor: ChangeActor;
  before: Snapshot | null;
  after: Snapshot | null;
  /** A governed row's content after the change (null once deleted); omitted for a resource that is not governed. */
  state?: Snapshot | null;
}

/** The hash a change records of a governed row's content, and what the row is compared with. */
export function changeStateHash(state: Snapshot): string {
  return sha256Hex(canonicalJson(state));
}

/**
 * The text a change row's leaf is computed over: its every column, canonical JSON. Its SHA-256 is
 * the leaf's data (leaf hash = SHA-256(0x00 || SHA-256(text))), as an event's hash is for its leaf.
 */
export function changeText(row: AdminChangeRow): string {
  return canonicalJson({ v: 1, kind: 'change', ...changeWho(row), ts: Number(row.ts), before: row.before, after: row.after, stateHash: row.state_hash });
}

/** What a change row says of what was changed, and by whom: in its leaf text and in its answer alike. */
function changeWho(row: AdminChangeRow) {
  return {
    id: row.id,
    resource: row.resource,
    resourceId: row.resource_id,
    action: row.action,
    actor: row.actor,
    actorKeyId: row.actor_key_id,
    actorKeyName: row.actor_key_name,
  };
}

/** The leaf hash of a change row (changeText). */
export function changeLeafHash(row: AdminChangeRow): Buffer {
  return leafHash(sha256(changeText(row)));
}

/**
 * Appends the rows' leaves (scope null), in order, in the caller's transaction: advancing the head
 * takes its row lock, as appendLeaves does, so leaf indices follow commit order. `kinded`: the
 * leaves table has its `kind` column (the migration steps shipped before it write none: the step
 * that adds it backfills them, addLeafKinds).
 */
async function appendChangeLeaves(db: Kysely<ChangeLogTables>, rows: readonly AdminChangeRow[], kinded: boolean): Promise<void> {
  const head = await db
    .updateTable('audit_log_head')
    .set((eb) => ({ size: eb('size', '+', rows.length) }))
    .where('id', '=', 1)
    .returning('size')
    .executeTakeFirstOrThrow();
  const start = Number(head.size) - rows.length;
  await db
    .insertInto('audit_log_leaves')
    .values(rows.map((row, i) => ({ idx: start + i, item_id: row.id, scope_id: null, leaf_hash: changeLeafHash(row), ...(kinded && { kind: CHANGE_LEAF }) })))
    .execute();
}

const REDACTED = '[redacted]';
/** Property names whose string values are credentials; snapshots are built from public shapes, this is the backstop. */
const SECRET_NAME = /(secret|hash|token|password)$/i;

function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, inner]) => [name, typeof inner === 'string' && SECRET_NAME.test(name) ? REDACTED : redact(inner)]),
  );
}

/** Writes the change's row and its leaf; `trx` is the transaction that makes the change, its schema names the resources it may record. */
export async function recordChange<Schema extends ChangeLogTables>(
  trx: Transaction<Schema>,
  change: Change<ChangeResourceOf<Schema>>,
  now: number,
): Promise<void> {
  const row: AdminChangeRow = {
    id: newId(),
    ts: now,
    resource: change.resource,
    resource_id: change.resourceId,
    action: change.action,
    actor: change.actor.actor,
    actor_key_id: change.actor.keyId,
    actor_key_name: change.actor.keyName,
    before: change.before === null ? null : canonicalJson(redact(change.before)),
    after: change.after === null ? null : canonicalJson(redact(change.after)),
    state_hash: change.state === undefined || change.state === null ? null : changeStateHash(change.state),
  };
  const db = tablesOf<ChangeLogTables, Schema>(trx);
  await db.insertInto('admin_changes').values(row).execute();
  await appendChangeLeaves(db, [row], true);
}

/** The actor of the changes an upgrade records for governed rows that existed before their changes were logged. */
export const UPGRADE_CHANGE_ACTOR: ChangeActor = { actor: 'system:upgrade', keyId: null, keyName: null };

/**
 * Migration step body, once per service: the `state_hash` column, and a leaf for every change row
 * stored before rows were leaves, oldest first (time, then id).
 */
export async function logChangeRowsAsLeaves(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('admin_changes').addColumn('state_hash', 'text').execute();
  const view = db as unknown as Kysely<ChangeLogTables>;
  let after: { ts: number; id: string } | null = null;
  for (;;) {
    let page = view.selectFrom('admin_changes').selectAll().orderBy('ts').orderBy('id').limit(500);
    if (after !== null) {
      const { ts, id } = after;
      page = page.where((eb) => eb.or([eb('ts', '>', ts), eb.and([eb('ts', '=', ts), eb('id', '>', id)])]));
    }
    const rows = await page.execute();
    if (rows.length === 0) return;
    await appendChangeLeaves(view, rows, false);
    after = { ts: Number(rows[rows.length - 1]!.ts), id: rows[rows.length - 1]!.id };
  }
}

/**
 * Migration step body of a feature that starts governing rows by the log (after
 * logChangeRowsAsLeaves): one `updated` change by `system:upgrade`, without snapshots, recording
 * each row's state as it is now, with its leaf. Rows that exist at the upgrade are so taken as
 * logged at its time, and the log says so.
 */
export async function adoptGovernedRows(
  db: MigrationDb,
  resource: string,
  adopted: readonly { id: string | null; state: Snapshot }[],
  now: number,
): Promise<void> {
  const view = db as unknown as Kysely<ChangeLogTables>;
  for (let i = 0; i < adopted.length; i += 500) {
    const rows: AdminChangeRow[] = adopted.slice(i, i + 500).map(({ id, state }) => ({
      id: newId(),
      ts: now,
      resource,
      resource_id: id,
      action: 'updated',
      actor: UPGRADE_CHANGE_ACTOR.actor,
      actor_key_id: null,
      actor_key_name: null,
      before: null,
      after: null,
      state_hash: changeStateHash(state),
    }));
    await view.insertInto('admin_changes').values(rows).execute();
    await appendChangeLeaves(view, rows, false);
  }
}

/** The governed content of a row: the named columns (those a change through the service sets), in canonical order. */
export function governedState(row: object, columns: readonly string[]): Snapshot {
  const values = row as Record<string, unknown>;
  return Object.fromEntries(columns.map((column) => [column, values[column] ?? null]));
}

/**
 * adoptGovernedRows for every row of `table`, each one's state the given columns (those the
 * feature's live state function governs, written out in the step so that it never changes).
 */
export async function adoptGovernedTable(db: MigrationDb, table: string, resource: string, columns: readonly string[]): Promise<void> {
  const rows = await (db as unknown as Kysely<Record<string, Record<string, unknown>>>).selectFrom(table).select(columns).execute();
  await adoptGovernedRows(
    db,
    resource,
    rows.map((row) => ({ id: row.id as string, state: governedState(row, columns) })),
    Date.now(),
  );
}

/**
 * What an update did: `enabled` / `disabled` when the enabled flag is all that changed (besides
 * `updatedAt`), `updated` otherwise, null when nothing changed (no row is written then).
 */
export function updateAction(before: Snapshot, after: Snapshot): ChangeAction | null {
  const old = before as Record<string, unknown>;
  const now = after as Record<string, unknown>;
  const names = new Set([...Object.keys(old), ...Object.keys(now)]);
  names.delete('updatedAt');
  const changed = [...names].filter((name) => canonicalJson(old[name] ?? null) !== canonicalJson(now[name] ?? null));
  if (changed.length === 0) return null;
  if (changed.length === 1 && changed[0] === 'enabled') return now.enabled === true ? 'enabled' : 'disabled';
  return 'updated';
}

/** A governed row's update as the change log sees it: the row before and after, how the service shows it, and its governed state. */
export interface RowUpdate<Resource extends string, Row> {
  resource: Resource;
  resourceId: string;
  actor: ChangeActor;
  before: Row;
  after: Row;
  show: (row: Row) => Snapshot;
  /** A governed row's content (omitted for a resource that is not governed). */
  state?: (row: Row) => Snapshot;
}

/** Records an update of a governed row (see updateAction); answers its action, null when nothing changed and nothing was recorded. */
export async function recordUpdate<Schema extends ChangeLogTables, Row>(
  trx: Transaction<Schema>,
  update: RowUpdate<ChangeResourceOf<Schema>, Row>,
  now: number,
): Promise<ChangeAction | null> {
  const before = update.show(update.before);
  const after = update.show(update.after);
  const action = updateAction(before, after);
  if (action === null) return null;
  const { resource, resourceId, actor } = update;
  await recordChange(trx, { resource, resourceId, action, actor, before, after, ...(update.state && { state: update.state(update.after) }) }, now);
  return action;
}

// ---- the list (GET /api/audit/changes in each service) ----

// One component for both services (zod's registry of named schemas is process-wide, and `vigil up`
// runs both in one process): an entry's resource is a string, the route's `resource` filter lists
// the service's names.
export const adminChangeSchema = z
  .object({
    id: z.string(),
    timestamp: z.string(),
    resource: z.string().describe('The resource changed: one of the names the `resource` filter takes'),
    resourceId: z.string().nullable(),
    action: z.string(),
    actor: z.string(),
    actorKeyId: z.string().nullable(),
    actorKeyName: z.string().nullable(),
    before: z.record(z.string(), z.unknown()).nullable(),
    after: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: 'AdminChange' });

export type AdminChange = z.infer<typeof adminChangeSchema>;

export const adminChangePageSchema = z.object({ entries: z.array(adminChangeSchema), nextCursor: z.string().nullable(), hasMore: z.boolean() });

export type AdminChangePage = z.infer<typeof adminChangePageSchema>;

/** The query of a service's list: `resource` takes the service's names. */
export function adminChangeQuerySchema<Resource extends string>(resources: ChangeResources<Resource>) {
  return z
    .strictObject({
      resource: z.enum(resources).optional(),
      resourceId: z.string().min(1).max(200).optional(),
      action: z.enum(CHANGE_ACTIONS).optional(),
      keyId: z.string().min(1).max(100).optional(),
      from: isoTimestampMs.optional(),
      to: isoTimestampMs.optional(),
      cursor: timeCursorSchema.optional(),
      limit: z.coerce.number().int().min(1).max(500).default(50),
    })
    .refine((q) => q.from === undefined || q.to === undefined || q.from <= q.to, { message: 'from must not be after to', path: ['from'] });
}

export type AdminChangeQuery = z.output<ReturnType<typeof adminChangeQuerySchema<string>>>;

function toAdminChange(row: AdminChangeRow): AdminChange {
  return {
    ...changeWho(row),
    timestamp: toIso(row.ts),
    before: row.before === null ? null : (JSON.parse(row.before) as Record<string, unknown>),
    after: row.after === null ? null : (JSON.parse(row.after) as Record<string, unknown>),
  };
}

/** One page of changes, newest first (time, then id); every filter reads its own index (createAdminChangeTable). */
export async function listAdminChanges<Schema extends AdminChangeTables>(db: Kysely<Schema>, query: AdminChangeQuery): Promise<AdminChangePage> {
  let select = tablesOf<AdminChangeTables, Schema>(db).selectFrom('admin_changes').selectAll();
  if (query.resource !== undefined) select = select.where('resource', '=', query.resource);
  if (query.resourceId !== undefined) select = select.where('resource_id', '=', query.resourceId);
  if (query.action !== undefined) select = select.where('action', '=', query.action);
  if (query.keyId !== undefined) select = select.where('actor_key_id', '=', query.keyId);
  if (query.from !== undefined) select = select.where('ts', '>=', query.from);
  if (query.to !== undefined) select = select.where('ts', '<=', query.to);
  const page = await readNewestFirstPage(select, query.cursor, query.limit);
  return { entries: page.rows.map(toAdminChange), nextCursor: page.nextCursor, hasMore: page.hasMore };
}

/** GET /api/audit/changes of a service, readable with `scope` (the service's administrators), whose `resource` filter takes the service's names. */
export function registerAdminChangeRoute<Schema extends AdminChangeTables>(
  app: ZodApp,
  db: Kysely<Schema>,
  scope: RouteScope,
  resources: ChangeResources<ChangeResourceOf<Schema>>,
): void {
  app.get(
    '/api/audit/changes',
    {
      config: { scope },
      schema: {
        operationId: 'listAdminChanges',
        summary: 'Administrative changes, newest first: who changed what, with the API key behind the actor, before and after',
        description:
          'Every creation, change, enabling, disabling, deletion or revocation of an administrative resource, written in ' +
          'the transaction of the change. Snapshots are the resource as the API shows it, so they never contain a secret. ' +
          'Filters (all optional, combined with AND): `resource`, `resourceId`, `action`, `keyId` (the API key behind the ' +
          'actor), `from` and `to` (ISO 8601, inclusive). Pages by cursor: pass `nextCursor` of one answer as `cursor` of ' +
          'the next, with the same filters; it is null on the last page. Unknown query parameters are a 400.',
        tags: ['audit'],
        querystring: adminChangeQuerySchema(resources),
        response: { 200: adminChangePageSchema },
      },
    },
    async (request) => listAdminChanges(db, request.query),
  );
}
