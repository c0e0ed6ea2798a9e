import {
  BulkInserter, completedBy, consistencyProof, epochMsType, inclusionProof, leafHash, nodeHash, nodesNeeded, perfectRun, PreparedQuery, treeRoot,
  type DialectName, type MigrationDb, type NodeReader, type NodeRef,
} from '@vigil/platform';
import type { Kysely } from 'kysely';
import type { ObserveSchema } from '../schema.ts';

/**
 * The audit log: one append-only Merkle tree (RFC 9162 hashing, platform/merkle.ts) per service
 * whose leaves are the events, in commit order. An event's leaf is its 32-byte chain hash:
 * leaf_hash = SHA-256(0x00 || hash). Stored are the leaves and the root of every complete perfect
 * subtree (audit_log_nodes, levels ≥ 1), written with the leaves, so a root or proof at any size
 * reads O(log n) rows and nothing is ever recomputed from the leaves.
 */

export async function createAuditLogTables(db: MigrationDb): Promise<void> {
  await db.schema.createTable('audit_log_head').addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('size', 'bigint', (c) => c.notNull()).execute();
  await db.insertInto('audit_log_head').values({ id: 1, size: 0 }).execute();
  await db.schema
    .createTable('audit_log_leaves')
    .addColumn('idx', 'bigint', (c) => c.primaryKey())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('leaf_hash', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('audit_log_leaves_event').unique().on('audit_log_leaves').columns(['event_id']).execute();
  await db.schema
    .createTable('audit_log_nodes')
    .addColumn('level', 'integer', (c) => c.notNull())
    .addColumn('idx', 'bigint', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('audit_log_nodes_pk', ['level', 'idx'])
    .execute();
  await db.schema
    .createTable('audit_checkpoints')
    .addColumn('tree_size', 'bigint', (c) => c.primaryKey())
    .addColumn('root_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', epochMsType, (c) => c.notNull())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('audit_keys')
    .addColumn('key_id', 'text', (c) => c.primaryKey())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('created_at', epochMsType, (c) => c.notNull())
    .execute();
}

/**
 * Events stored before the log existed become its first leaves, in (ts, session, seq) order: the
 * only order known for them (commit order is not recorded).
 */
export async function backfillAuditLog(db: MigrationDb, dialect: DialectName): Promise<void> {
  const typed = db as Kysely<ObserveSchema>;
  let after: { ts: number; session_id: string; seq: number } | null = null;
  for (;;) {
    let page = typed.selectFrom('events').select(['id', 'hash', 'ts', 'session_id', 'seq']).orderBy('ts').orderBy('session_id').orderBy('seq').limit(1000);
    if (after !== null) {
      const { ts, session_id, seq } = after;
      page = page.where((eb) =>
        eb.or([
          eb('ts', '>', ts),
          eb.and([eb('ts', '=', ts), eb('session_id', '>', session_id)]),
          eb.and([eb('ts', '=', ts), eb('session_id', '=', session_id), eb('seq', '>', seq)]),
        ]),
      );
    }
    const rows = await page.execute();
    if (rows.length === 0) return;
    await appendLeaves(typed, dialect, rows);
    after = rows[rows.length - 1]!;
  }
}

const advanceHead = new PreparedQuery((db: Kysely<ObserveSchema>, _dialect: DialectName, count: number) =>
  db
    .updateTable('audit_log_head')
    .set((eb) => ({ size: eb('size', '+', count) }))
    .where('id', '=', 1)
    .returning('size'),
);

const leafInserter = new BulkInserter<ObserveSchema, 'audit_log_leaves'>('audit_log_leaves', ['idx', 'event_id', 'leaf_hash']);
const nodeInserter = new BulkInserter<ObserveSchema, 'audit_log_nodes'>('audit_log_nodes', ['level', 'idx', 'hash']);

/**
 * Appends the events as the next leaves, with the perfect-subtree roots they complete. Called in
 * the ingest transaction: advancing the head takes its row lock (PostgreSQL; SQLite has one
 * writer), held to the commit, so leaf indices follow commit order across instances.
 */
export async function appendLeaves(trx: Kysely<ObserveSchema>, dialect: DialectName, events: readonly { id: string; hash: string }[]): Promise<void> {
  if (events.length === 0) return;
  const head = await advanceHead.first(trx, dialect, events.length);
  const start = head!.size - events.length;
  // The roots left of `start` that new nodes pair with: the perfect subtrees of the tree of `start` leaves.
  const known = await readStoredNodes(trx, perfectRun(0, start));
  const leaves = events.map((event, i) => {
    const hash = leafHash(Buffer.from(event.hash, 'hex'));
    known.set(key(0, start + i), hash);
    return { idx: start + i, event_id: event.id, leaf_hash: hash.toString('hex') };
  });
  const nodes: { level: number; idx: number; hash: string }[] = [];
  for (let i = 0; i < events.length; i += 1) {
    for (const node of completedBy(start + i)) {
      if (node.level === 0) continue;
      const hash = nodeHash(known.get(key(node.level - 1, node.index * 2))!, known.get(key(node.level - 1, node.index * 2 + 1))!);
      known.set(key(node.level, node.index), hash);
      nodes.push({ level: node.level, idx: node.index, hash: hash.toString('hex') });
    }
  }
  await leafInserter.insert(trx, dialect, leaves);
  await nodeInserter.insert(trx, dialect, nodes);
}

function key(level: number, index: number): string {
  return `${level}:${index}`;
}

async function readStoredNodes(db: Kysely<ObserveSchema>, refs: readonly NodeRef[]): Promise<Map<string, Buffer>> {
  const found = new Map<string, Buffer>();
  if (refs.length === 0) return found;
  const leafIndices = refs.filter((ref) => ref.level === 0).map((ref) => ref.index);
  if (leafIndices.length > 0) {
    const rows = await db.selectFrom('audit_log_leaves').select(['idx', 'leaf_hash']).where('idx', 'in', leafIndices).execute();
    for (const row of rows) found.set(key(0, Number(row.idx)), Buffer.from(row.leaf_hash, 'hex'));
  }
  const inner = refs.filter((ref) => ref.level > 0);
  if (inner.length > 0) {
    const rows = await db
      .selectFrom('audit_log_nodes')
      .select(['level', 'idx', 'hash'])
      .where((eb) => eb.or(inner.map((ref) => eb.and([eb('level', '=', ref.level), eb('idx', '=', ref.index)]))))
      .execute();
    for (const row of rows) found.set(key(row.level, Number(row.idx)), Buffer.from(row.hash, 'hex'));
  }
  return found;
}

/** Runs a proof function (platform/merkle.ts) on the stored nodes it needs, read in at most two queries. */
async function withStoredNodes<T>(db: Kysely<ObserveSchema>, run: (read: NodeReader) => T): Promise<T> {
  const found = await readStoredNodes(db, nodesNeeded(run));
  return run((level, index) => {
    const hash = found.get(key(level, index));
    if (hash === undefined) throw new Error(`audit log node ${level}:${index} is missing`);
    return hash;
  });
}

/** How many leaves the log has (every one committed). */
export async function logSize(db: Kysely<ObserveSchema>): Promise<number> {
  const row = await db.selectFrom('audit_log_head').select('size').where('id', '=', 1).executeTakeFirstOrThrow();
  return Number(row.size);
}

export function rootAt(db: Kysely<ObserveSchema>, size: number): Promise<Buffer> {
  return withStoredNodes(db, (read) => treeRoot(size, read));
}

export function inclusionPath(db: Kysely<ObserveSchema>, index: number, size: number): Promise<Buffer[]> {
  return withStoredNodes(db, (read) => inclusionProof(index, size, read));
}

export function consistencyPath(db: Kysely<ObserveSchema>, from: number, to: number): Promise<Buffer[]> {
  return withStoredNodes(db, (read) => consistencyProof(from, to, read));
}

/** The leaf of an event: its index and leaf hash; undefined when the event has none. */
export async function leafOfEvent(db: Kysely<ObserveSchema>, eventId: string): Promise<{ index: number; leafHash: string } | undefined> {
  const row = await db.selectFrom('audit_log_leaves').select(['idx', 'leaf_hash']).where('event_id', '=', eventId).executeTakeFirst();
  return row === undefined ? undefined : { index: Number(row.idx), leafHash: row.leaf_hash };
}
