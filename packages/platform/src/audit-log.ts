import { appendFile } from 'node:fs/promises';
import { sql, type Kysely } from 'kysely';
import {
  checkpointMessage,
  evidenceManifestMessage,
  keyCertificateBody,
  loadSigningKey,
  parseSigningKey,
  signBytes,
  type Checkpoint,
  type SigningKey,
} from './audit-keys.ts';
import { HEADS_LEAF } from './audit-heads-format.ts';
import { commitScopeHeads, leavesSinceHeadsLeaf, prepareScopeHeads, type AuditHeadTables, type HeadMapCache, type ScopeHeadSource } from './audit-heads.ts';
import { HeadsThread } from './audit-heads-threaded.ts';
import type { AuditCosigner, AuditLogConfig } from './config.ts';
import type { Clock } from './clock.ts';
import { canonicalJson, signTimestampedBody } from './crypto.ts';
import { BulkInserter, epochMsType, forUpdate, PreparedQuery, tablesOf, type DialectName, type MigrationDb, type SqliteFile } from './db.ts';
import { DeliveryQueue, newDelivery, withDeliveryColumns, type DeliveryColumns } from './deliveries.ts';
import { newId } from './ids.ts';
import {
  completedBy,
  consistencyProof,
  inclusionProof,
  leafHash,
  nodeHash,
  nodesNeeded,
  perfectRun,
  treeRoot,
  type NodeReader,
  type NodeRef,
} from './merkle.ts';
import {
  formatCheckpointBody,
  formatNote,
  formatSignatureLine,
  formatVerifierKey,
  isKeyName,
  NOTE_ED25519,
  noteKeyHash,
  parseCheckpointBody,
  parseNote,
  parseSignatureLine,
  sameKey,
  signNoteText,
  tileNodes,
  tileWithin,
  verifyCosignature,
  type TileRef,
} from './signed-note.ts';
import { hashHex, hashOf } from './stored-hash.ts';
import { toIso } from './time.ts';
import { VIGIL_VERSION } from './version.ts';

/**
 * A service's audit log: one append-only Merkle tree (RFC 9162 hashing, merkle.ts) whose leaves
 * are the service's audited items (the items of its hash chains) and tombstones, in
 * commit order, with signed checkpoints (tree heads) pushed to witnesses. Stored are the leaves and
 * the root of every complete perfect subtree of 16 leaves or more (level ≥ STORED_LEVEL, immutable
 * once written), so a root or proof at any size reads O(log n) rows and at most 16 leaves
 * (docs/audit.md). Leaves are written in the items' own transaction; the inner nodes are an index
 * of them, built off the request path (buildNodes) before a checkpoint is signed or a proof read.
 */

/** One row (id 1): how many leaves the log has; its row lock orders appends. */
export interface AuditLogHeadRow {
  id: number;
  size: number;
}

/** One row (id 1): how many leaves the inner nodes are built for (buildNodes); its row lock serialises builders. */
export interface AuditLogBuiltRow {
  id: number;
  size: number;
}

/**
 * A leaf: leaf_hash = SHA-256(0x00 || leaf data), its 32 bytes (stored-hash.ts); the item it logs
 * and the chain (session, request) the item belongs to.
 */
export interface AuditLogLeafRow {
  idx: number;
  item_id: string;
  scope_id: string | null;
  leaf_hash: Buffer;
  /** What the leaf logs (LeafKind); null only for leaves written before the column existed, until its step backfills them. */
  kind: string | null;
}

/** The root (32 bytes) of the complete perfect subtree `idx` at `level` (its 2^level leaves start at idx·2^level). */
export interface AuditLogNodeRow {
  level: number;
  idx: number;
  hash: Buffer;
}

/** A signed tree head. */
export interface AuditCheckpointRow {
  tree_size: number;
  root_hash: string;
  created_at: number;
  key_id: string;
  signature: string;
  /**
   * The same tree head as a C2SP signed note (tlog-checkpoint text and the log's Ed25519 note
   * signature line); null for checkpoints signed before notes were.
   */
  note: string | null;
}

/** A witness's v1 cosignature (tlog-cosignature) of the checkpoint note at `tree_size`: its whole signature line. */
export interface AuditCosignatureRow {
  tree_size: number;
  key_name: string;
  /** The key hash, 8 hex digits (signed-note). */
  key_hash: string;
  /** When the witness cosigned (Unix seconds, from the cosignature). */
  cosigned_at: number;
  line: string;
}

/**
 * A key that has signed checkpoints (base64 raw public key): kept after a rotation. A key that
 * replaced another carries the previous key's certificate of it: the leaf data (`certificate`,
 * keyCertificateBody), its signature by the previous key, and the index of that leaf in the log.
 */
export interface AuditKeyRow {
  key_id: string;
  public_key: string;
  created_at: number;
  certificate: string | null;
  certificate_signature: string | null;
  certificate_leaf: number | null;
}

/** A tombstone leaf: `body` is its leaf data (canonical JSON), `signature` the audit key's over those bytes. */
export interface AuditTombstoneRow {
  leaf_idx: number;
  scope_id: string;
  body: string;
  signature: string;
}

/** A checkpoint pushed to a witness webhook (the durable delivery queue). */
export interface AuditWitnessDeliveryRow extends DeliveryColumns {
  tree_size: number;
}

/** The tables a service's schema includes to keep an audit log. */
export interface AuditLogTables extends AuditHeadTables {
  audit_log_head: AuditLogHeadRow;
  audit_log_built: AuditLogBuiltRow;
  audit_log_leaves: AuditLogLeafRow;
  audit_log_nodes: AuditLogNodeRow;
  audit_checkpoints: AuditCheckpointRow;
  audit_keys: AuditKeyRow;
  audit_tombstones: AuditTombstoneRow;
  audit_witness_deliveries: AuditWitnessDeliveryRow;
  audit_cosignatures: AuditCosignatureRow;
}

/** Migration step body: every table of a new log (observe's log came in two steps: its 0016 and 0017). */
export async function createAuditLogTables(db: MigrationDb): Promise<void> {
  await createAuditLogBaseTables(db, { itemColumn: 'item_id', scoped: true, itemIndex: 'audit_log_leaves_item' });
  await createAuditLogWitnessTables(db);
}

/**
 * The log's head, leaves, nodes, checkpoints and keys. The leaves name their item in `itemColumn`
 * (unique, through `itemIndex`), then its chain in `scope_id` when `scoped`: observe's first log
 * (its 0016) keyed them by `event_id` without a scope, and its 0017 turned them into this shape.
 * Shipped steps run it, so it never changes: a new shape is a new step.
 */
export async function createAuditLogBaseTables(db: MigrationDb, leaves: { itemColumn: string; scoped: boolean; itemIndex: string }): Promise<void> {
  await db.schema
    .createTable('audit_log_head')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .execute();
  await db.insertInto('audit_log_head').values({ id: 1, size: 0 }).execute();
  let leafTable = db.schema
    .createTable('audit_log_leaves')
    .addColumn('idx', 'bigint', (c) => c.primaryKey())
    .addColumn(leaves.itemColumn, 'text', (c) => c.notNull());
  if (leaves.scoped) leafTable = leafTable.addColumn('scope_id', 'text');
  await leafTable.addColumn('leaf_hash', 'text', (c) => c.notNull()).execute();
  await db.schema.createIndex(leaves.itemIndex).unique().on('audit_log_leaves').columns([leaves.itemColumn]).execute();
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

/** The built-nodes row, tombstone and witness tables (observe's migration 0017 adds them to its earlier log, whose nodes are built). */
export async function createAuditLogWitnessTables(db: MigrationDb, builtSize = 0): Promise<void> {
  await db.schema
    .createTable('audit_log_built')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .execute();
  await db.insertInto('audit_log_built').values({ id: 1, size: builtSize }).execute();
  await db.schema
    .createTable('audit_tombstones')
    .addColumn('leaf_idx', 'bigint', (c) => c.primaryKey())
    .addColumn('scope_id', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .execute();
  await withDeliveryColumns(
    db.schema
      .createTable('audit_witness_deliveries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('tree_size', 'bigint', (c) => c.notNull()),
  ).execute();
  await db.schema.createIndex('audit_witness_deliveries_due').on('audit_witness_deliveries').columns(['status', 'next_attempt_at']).execute();
}

/**
 * What a leaf logs, stored with it (not under its hash: each kind's data already says what it is,
 * docs/audit.md): an item of a chain (the service names it, e.g. its chain items' noun), a
 * tombstone, a key rotation, a change row, or another record the service logs.
 */
export type LeafKind = string;

const TOMBSTONE_LEAF: LeafKind = 'tombstone';
const KEY_ROTATION_LEAF: LeafKind = 'key-rotation';
export const CHANGE_LEAF: LeafKind = 'change';

/** What one leaf logs: the item, the chain it belongs to, its kind, and the leaf's data (hashed as SHA-256(0x00 || data)). */
export interface LeafInput {
  itemId: string;
  /** Null for a leaf of no chain (a key rotation). */
  scopeId: string | null;
  kind: LeafKind;
  data: Buffer;
}

/** A leaf as the audit walk shows it; `tombstone` set on tombstone leaves. */
export interface StoredLeaf {
  index: number;
  itemId: string;
  scopeId: string | null;
  leafHash: string;
  kind: LeafKind | null;
  tombstone: { body: string; signature: string } | null;
}

/** Where checkpoints are pushed, so a copy survives whoever controls the database. */
export interface AuditWitnessConfig {
  /** Webhooks receiving every checkpoint (POST, JSON; durable, retried). */
  urls: readonly string[];
  /** With it, each POST carries X-Vigil-Signature: sha256=HMAC(secret, "<X-Vigil-Timestamp>.<body>"). */
  secret?: string;
  /** A file outside the data directory to which each checkpoint is appended as one JSON line. */
  file?: string;
  timeoutMs: number;
}

export interface AuditLogOptions<Schema extends AuditLogTables> {
  /** The log's name in what is signed: `vigil-observe`, `vigil-gate`. */
  name: string;
  db: Kysely<Schema>;
  dialect: DialectName;
  key: SigningKey;
  /** The key `key` replaces (AUDIT_PREVIOUS_SIGNING_KEY): it certifies `key` when registerKey first records it. */
  previousKey?: SigningKey;
  clock: Clock;
  witnesses: AuditWitnessConfig;
  /** The C2SP checkpoint's origin and note key name (defaults: `<name>/<keyId>`, and the origin), and the witnesses asked to cosign it. */
  tlog?: { origin?: string; keyName?: string; cosigners: readonly AuditCosigner[] };
  /**
   * Where the service records its chains' heads: each checkpoint then ends with a heads leaf
   * committing every scope's head (commitScopeHeads, docs/audit.md "Session heads").
   */
  heads?: ScopeHeadSource;
  /**
   * SQLite: the service's file (Database.sqlite). A checkpoint with at least `headsThreadFrom`
   * leaves since the last heads leaf (default HEADS_THREAD_FROM) then drafts and commits its heads
   * leaf on a thread of its own (HeadsThread).
   */
  sqlite?: SqliteFile & { headsThreadFrom?: number };
  /** A checkpoint is signed once this many leaves were committed through this instance (`committed`); other instances count their own. */
  checkpointEvents: number;
  /** The integrator's leader signs when the log grew since a checkpoint this old (AUDIT_CHECKPOINT_INTERVAL_MS; default: at every round it grew). */
  checkpointIntervalMs?: number;
  log: { warn(object: object, message: string): void; error(object: object, message: string): void };
}

/**
 * A root or proof the log cannot compute because rows it needs were deleted behind the service: a
 * leaf, or a stored inner node. Routes answer it as their service's `auditLogIncomplete` error (never
 * a 500), naming what is missing, so a verifier reports tampering instead of failing.
 */
export class AuditLogIncompleteError extends Error {
  override name = 'AuditLogIncompleteError';
  constructor(readonly missing: string) {
    super(`The audit log is missing ${missing}: its row was deleted, so no root or proof over it can be computed`);
  }
}

/** A cosigned note POST /api/audit/tlog/cosignatures refuses (AuditLog.addCosignatures); the message says why. */
export class CosignatureRefused extends Error {
  override name = 'CosignatureRefused';
}

/** What a missing node (readNodes) stands for: a leaf, or a stored node and the leaves it covers. */
function missingNode(level: number, index: number): string {
  if (level === 0) return `leaf ${index}`;
  const first = index * 2 ** level;
  return `the stored node ${level}:${index} (over leaves ${first}–${first + 2 ** level - 1})`;
}

const WITNESS_MAX_ATTEMPTS = 8;
/**
 * SQLite: a checkpoint with this many leaves since the last heads leaf drafts and commits it on the
 * heads thread (HeadsThread); a smaller one costs the serving thread less than the thread's round trips.
 */
const HEADS_THREAD_FROM = 256;
/** A follower waiting for the integrator's leader: how often it looks, wakes the leader again, and gives up. */
const LEADER_POLL_MS = 25;
const LEADER_WAKE_MS = 1000;
const LEADER_WAIT_MS = 30_000;

/** What a log needs of the integrator it takes part in (audit-integrator.ts). */
export interface LogIntegrator {
  leading(): boolean;
  wake(): Promise<void>;
}
/** Stored nodes (or leaf ranges) read per query by readNodes (well under either database's bound on parameters). */
const NODES_PER_QUERY = 400;

/**
 * Inner nodes below this level are not stored: one is computed from its 2^level leaves when a proof
 * or root needs it (readNodes). Storing levels ≥ 4 only writes an eighth of the rows a full index
 * would (n/8 for n leaves), which is most of what building costs ingest, for at most 15 hashes and
 * a 16-leaf range read per proof.
 */
const STORED_LEVEL = 4;

/** A node's key in a map: its index and level in one number (indices stay far below 2^47). */
function nodeKey(level: number, index: number): number {
  return index * 64 + level;
}

const advanceHead = new PreparedQuery((db: Kysely<AuditLogTables>, _dialect: DialectName, count: number) =>
  db
    .updateTable('audit_log_head')
    .set((eb) => ({ size: eb('size', '+', count) }))
    .where('id', '=', 1)
    .returning('size'),
);

// The inclusion route's reads: prepared once, as they run on every proof request.
const latestCheckpoint = new PreparedQuery((db: Kysely<AuditLogTables>, _dialect: DialectName) =>
  db.selectFrom('audit_checkpoints').selectAll().orderBy('tree_size', 'desc').limit(1),
);
const checkpointAt = new PreparedQuery((db: Kysely<AuditLogTables>, _dialect: DialectName, treeSize: number) =>
  db.selectFrom('audit_checkpoints').selectAll().where('tree_size', '=', treeSize),
);
const leafOfItem = new PreparedQuery((db: Kysely<AuditLogTables>, _dialect: DialectName, itemId: string) =>
  db.selectFrom('audit_log_leaves').select(['idx', 'leaf_hash']).where('item_id', '=', itemId),
);

const leafInserter = new BulkInserter<AuditLogTables, 'audit_log_leaves'>('audit_log_leaves', {
  idx: 'bigint',
  item_id: 'text',
  scope_id: 'text',
  leaf_hash: 'bytea',
  kind: 'text',
});
const nodeInserter = new BulkInserter<AuditLogTables, 'audit_log_nodes'>('audit_log_nodes', { level: 'integer', idx: 'bigint', hash: 'bytea' });

/**
 * Appends leaves; answers the first new index. Call it in the transaction that writes the items:
 * advancing the head takes its row lock (PostgreSQL; SQLite has one writer), held to the commit, so
 * leaf indices follow commit order across instances. One hash and one row per leaf: the inner
 * nodes are built later (buildNodes), off the ingest path.
 */
export async function appendLeaves<Schema extends AuditLogTables>(trx: Kysely<Schema>, dialect: DialectName, leaves: readonly LeafInput[]): Promise<number> {
  const db = tablesOf<AuditLogTables, Schema>(trx);
  if (leaves.length === 0) return -1;
  const head = await advanceHead.first(db, dialect, leaves.length);
  const start = Number(head!.size) - leaves.length;
  const rows = leaves.map((leaf, i) => ({ idx: start + i, item_id: leaf.itemId, scope_id: leaf.scopeId, leaf_hash: leafHash(leaf.data), kind: leaf.kind }));
  await leafInserter.insert(db, dialect, rows);
  return start;
}

/**
 * Migration step body: every row of `table` (an audited item: id, hex hash, ts, seq, and its chain
 * in `scopeColumn`) without a leaf becomes the next leaf, in (ts, scope, seq) order: the only order
 * known for items stored before their log (commit order is not recorded), and each chain's own.
 */
export async function backfillLeaves(db: MigrationDb, table: string, scopeColumn: string): Promise<void> {
  let after: { ts: number; scope: string; seq: number } | null = null;
  for (;;) {
    let page = db
      .selectFrom(table)
      .select(['id', 'hash', 'ts', 'seq', `${scopeColumn} as scope`])
      .orderBy('ts')
      .orderBy(scopeColumn)
      .orderBy('seq')
      .limit(1000);
    if (after !== null) {
      const { ts, scope, seq } = after;
      page = page.where((eb) =>
        eb.or([
          eb('ts', '>', ts),
          eb.and([eb('ts', '=', ts), eb(scopeColumn, '>', scope)]),
          eb.and([eb('ts', '=', ts), eb(scopeColumn, '=', scope), eb('seq', '>', seq)]),
        ]),
      );
    }
    const rows = (await page.execute()) as { id: string; hash: string; ts: number; scope: string; seq: number }[];
    if (rows.length === 0) return;
    const logged = new Set(
      (
        await db
          .selectFrom('audit_log_leaves')
          .select('item_id')
          .where(
            'item_id',
            'in',
            rows.map((row) => row.id),
          )
          .execute()
      ).map((row) => row.item_id as string),
    );
    const unlogged = rows.filter((row) => !logged.has(row.id));
    if (unlogged.length > 0) {
      const head = await db
        .updateTable('audit_log_head')
        .set((eb) => ({ size: eb('size', '+', unlogged.length) }))
        .where('id', '=', 1)
        .returning('size')
        .executeTakeFirstOrThrow();
      const start = Number(head.size) - unlogged.length;
      // The leaves as the table stored them then: hex text (storeHashesAsBytes converts them later).
      await db
        .insertInto('audit_log_leaves')
        .values(
          unlogged.map((row, i) => ({
            idx: start + i,
            item_id: row.id,
            scope_id: row.scope,
            leaf_hash: leafHash(Buffer.from(row.hash, 'hex')).toString('hex'),
          })),
        )
        .execute();
    }
    after = rows[rows.length - 1]!;
  }
}

/** Leaves per transaction of buildNodes. */
const BUILD_CHUNK = 10_000;

/**
 * Builds the inner nodes (roots of complete perfect subtrees) for the first `size` leaves, from
 * where the last build stopped, in transactions of BUILD_CHUNK leaves that lock the built row (so
 * two instances never build the same nodes). Each node pairs two children already known: stored
 * nodes of the frontier, or nodes computed in this pass.
 */
export async function buildNodes<Schema extends AuditLogTables>(database: { db: Kysely<Schema>; dialect: DialectName }, size: number): Promise<void> {
  const db = tablesOf<AuditLogTables, Schema>(database.db);
  // Proofs and roots are read far more often than the log grows past them: no write transaction then.
  const built = await db.selectFrom('audit_log_built').select('size').where('id', '=', 1).executeTakeFirstOrThrow();
  if (Number(built.size) >= size) return;
  for (;;) {
    const done = await db.transaction().execute(async (trx) => {
      const built = Number(
        (await forUpdate(trx.selectFrom('audit_log_built').select('size').where('id', '=', 1), database.dialect).executeTakeFirstOrThrow()).size,
      );
      if (built >= size) return true;
      const end = Math.min(size, built + BUILD_CHUNK);
      const frontier = perfectRun(0, built);
      const readFrontier = await readNodes(trx, frontier);
      const known = new Map<number, Buffer>();
      for (const node of frontier) known.set(nodeKey(node.level, node.index), readFrontier(node.level, node.index));
      const leaves = await trx
        .selectFrom('audit_log_leaves')
        .select(['idx', 'leaf_hash'])
        .where('idx', '>=', built)
        .where('idx', '<', end)
        .orderBy('idx')
        .execute();
      if (leaves.length !== end - built) throw new AuditLogIncompleteError(`leaf ${firstGap(leaves, built)}`);
      for (const leaf of leaves) known.set(nodeKey(0, Number(leaf.idx)), hashOf(leaf.leaf_hash));
      const nodes: AuditLogNodeRow[] = [];
      for (let index = built; index < end; index += 1) {
        for (const node of completedBy(index)) {
          if (node.level === 0) continue;
          const hash = nodeHash(known.get(nodeKey(node.level - 1, node.index * 2))!, known.get(nodeKey(node.level - 1, node.index * 2 + 1))!);
          known.set(nodeKey(node.level, node.index), hash);
          if (node.level >= STORED_LEVEL) nodes.push({ level: node.level, idx: node.index, hash });
        }
      }
      await nodeInserter.insert(trx, database.dialect, nodes);
      await trx.updateTable('audit_log_built').set({ size: end }).where('id', '=', 1).execute();
      return end >= size;
    });
    if (done) return;
  }
}

/**
 * A reader of the nodes `refs` (and of nothing else): stored nodes read a few hundred per query;
 * a node below STORED_LEVEL computed from its leaves (at most 2^(STORED_LEVEL−1) − 1 hashes), read
 * by index ranges. Throws on a node the store does not have.
 */
async function readNodes(db: Kysely<AuditLogTables>, refs: readonly NodeRef[]): Promise<NodeReader> {
  const found = new Map<number, Buffer>();
  const leafRanges: { from: number; to: number }[] = [];
  const stored: NodeRef[] = [];
  for (const ref of refs) {
    if (ref.level >= STORED_LEVEL) stored.push(ref);
    else leafRanges.push({ from: ref.index * 2 ** ref.level, to: (ref.index + 1) * 2 ** ref.level });
  }
  for (let i = 0; i < leafRanges.length; i += NODES_PER_QUERY) {
    const ranges = leafRanges.slice(i, i + NODES_PER_QUERY);
    const rows = await db
      .selectFrom('audit_log_leaves')
      .select(['idx', 'leaf_hash'])
      .where((eb) => eb.or(ranges.map(({ from, to }) => (to - from === 1 ? eb('idx', '=', from) : eb.and([eb('idx', '>=', from), eb('idx', '<', to)])))))
      .execute();
    for (const row of rows) found.set(nodeKey(0, Number(row.idx)), hashOf(row.leaf_hash));
  }
  for (let i = 0; i < stored.length; i += NODES_PER_QUERY) {
    const nodes = stored.slice(i, i + NODES_PER_QUERY);
    const rows = await db
      .selectFrom('audit_log_nodes')
      .select(['level', 'idx', 'hash'])
      .where((eb) => eb.or(nodes.map((ref) => eb.and([eb('level', '=', ref.level), eb('idx', '=', ref.index)]))))
      .execute();
    for (const row of rows) found.set(nodeKey(row.level, Number(row.idx)), hashOf(row.hash));
  }
  const read: NodeReader = (level, index) => {
    const at = nodeKey(level, index);
    let hash = found.get(at);
    if (hash === undefined && level > 0 && level < STORED_LEVEL) {
      hash = nodeHash(read(level - 1, index * 2), read(level - 1, index * 2 + 1));
      found.set(at, hash);
    }
    if (hash === undefined) throw new AuditLogIncompleteError(missingNode(level, index));
    return hash;
  };
  return read;
}

/** The first index from `from` that `leaves` (in index order) lacks. */
function firstGap(leaves: readonly { idx: number }[], from: number): number {
  let expected = from;
  for (const leaf of leaves) {
    if (Number(leaf.idx) !== expected) return expected;
    expected += 1;
  }
  return expected;
}

/** Runs a proof function (merkle.ts) on the nodes it needs (readNodes). */
async function withStoredNodes<T>(db: Kysely<AuditLogTables>, run: (read: NodeReader) => T): Promise<T> {
  return run(await readNodes(db, nodesNeeded(run)));
}

/** The leaves of several items (one query per 500 ids), by item id; `db` may be a snapshot or transaction of the service's schema. */
export async function readLeavesOf<Schema extends AuditLogTables>(
  db: Kysely<Schema>,
  itemIds: readonly string[],
): Promise<Map<string, { index: number; leafHash: string }>> {
  const view = tablesOf<AuditLogTables, Schema>(db);
  const found = new Map<string, { index: number; leafHash: string }>();
  for (let i = 0; i < itemIds.length; i += 500) {
    const rows = await view
      .selectFrom('audit_log_leaves')
      .select(['item_id', 'idx', 'leaf_hash'])
      .where('item_id', 'in', itemIds.slice(i, i + 500))
      .execute();
    for (const row of rows) found.set(row.item_id, { index: Number(row.idx), leafHash: hashHex(row.leaf_hash) });
  }
  return found;
}

/**
 * How many item leaves the log holds for a scope (a session, a request) since its last tombstone:
 * the items logged for the chain that lives now. A stored chain shorter than that lost items the log
 * still has (a tail cut under a rewritten head). Reads the scope's leaves by their (scope_id, idx)
 * index, which each service's migrations create (on SQLite a (scope_id) index is the same order,
 * the leaf index being the rowid); `db` may be a snapshot of the service's schema.
 */
export async function countScopeLeaves<Schema extends AuditLogTables>(db: Kysely<Schema>, scopeId: string): Promise<number> {
  const view = tablesOf<AuditLogTables, Schema>(db);
  const row = await view
    .selectFrom('audit_log_leaves as l')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('l.scope_id', '=', scopeId)
    .where((eb) =>
      eb(
        'l.idx',
        '>',
        eb.fn.coalesce(
          eb
            .selectFrom('audit_log_leaves as tl')
            .innerJoin('audit_tombstones as t', 't.leaf_idx', 'tl.idx')
            .select((sub) => sub.fn.max('tl.idx').as('last'))
            .where('tl.scope_id', '=', scopeId),
          eb.lit(-1),
        ),
      ),
    )
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** Migration step body: the columns of a key's certificate by the key it replaced (AuditKeyRow). */
export async function addKeyCertificates(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('audit_keys').addColumn('certificate', 'text').execute();
  await db.schema.alterTable('audit_keys').addColumn('certificate_signature', 'text').execute();
  await db.schema.alterTable('audit_keys').addColumn('certificate_leaf', 'bigint').execute();
}

/**
 * Migration step body: the leaves' `kind` column, backfilled for the leaves stored before it from
 * what each one is known by — a tombstone row, a key's certificate, a change row, `others` (the
 * service's own records, leaf index → kind) — and otherwise an item of its chain (`itemKind`) when
 * it has one, a change whose row is gone when it has none.
 */
export async function addLeafKinds(
  db: MigrationDb,
  itemKind: LeafKind,
  others: readonly { table: string; leafColumn: string; kind: LeafKind }[] = [],
): Promise<void> {
  await db.schema.alterTable('audit_log_leaves').addColumn('kind', 'text').execute();
  const known = [
    { table: 'audit_tombstones', leafColumn: 'leaf_idx', kind: TOMBSTONE_LEAF },
    { table: 'audit_keys', leafColumn: 'certificate_leaf', kind: KEY_ROTATION_LEAF },
    ...others,
  ];
  for (const { table, leafColumn, kind } of known)
    await sql`update audit_log_leaves set kind = ${kind} where kind is null and idx in (select ${sql.ref(leafColumn)} from ${sql.table(table)} where ${sql.ref(leafColumn)} is not null)`.execute(
      db,
    );
  await sql`update audit_log_leaves set kind = ${CHANGE_LEAF} where kind is null and item_id in (select id from admin_changes)`.execute(db);
  await sql`update audit_log_leaves set kind = ${itemKind} where kind is null and scope_id is not null`.execute(db);
  await sql`update audit_log_leaves set kind = ${CHANGE_LEAF} where kind is null`.execute(db);
}

/** Migration step body: the checkpoints' C2SP notes and the witnesses' cosignatures of them (AuditCheckpointRow.note, AuditCosignatureRow). */
export async function addCheckpointNotes(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('audit_checkpoints').addColumn('note', 'text').execute();
  await db.schema
    .createTable('audit_cosignatures')
    .addColumn('tree_size', 'bigint', (c) => c.notNull())
    .addColumn('key_name', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull())
    .addColumn('cosigned_at', 'bigint', (c) => c.notNull())
    .addColumn('line', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('audit_cosignatures_pk', ['tree_size', 'key_name', 'key_hash'])
    .execute();
}

/** Migration step body: the index countScopeLeaves reads a scope's leaves by. */
export async function indexLeavesByScope(db: MigrationDb): Promise<void> {
  await db.schema.createIndex('audit_log_leaves_scope').on('audit_log_leaves').columns(['scope_id', 'idx']).execute();
}

/**
 * Migration step body (the gate's 0027): on SQLite the leaves' index becomes the table's rowid
 * (`integer primary key`, as observe's 0017 made its leaves). Declared `bigint primary key`, it was a
 * unique index beside a rowid of its own: every append wrote one B-tree more (a page of the WAL per
 * transaction) and stored the index twice. The table is copied under the same name, columns, rows
 * and indexes; PostgreSQL, whose rows have no such key, is left as it is.
 */
export async function keyLeavesByIndex(db: MigrationDb, dialect: DialectName): Promise<void> {
  if (dialect !== 'sqlite') return;
  const { rows: schema } = await sql<{ type: string; sql: string | null }>`
    select type, sql from sqlite_schema where tbl_name = 'audit_log_leaves' and sql is not null`.execute(db);
  const create = schema.find((row) => row.type === 'table')!.sql!;
  const rekeyed = create
    .replace(/^CREATE TABLE "audit_log_leaves"/i, 'CREATE TABLE "audit_log_leaves_rekeyed"')
    .replace(/"idx" bigint primary key/i, '"idx" integer primary key');
  if (!/"idx" integer primary key/i.test(rekeyed) || rekeyed === create) throw new Error(`audit_log_leaves is not the expected shape: ${create}`);
  await sql.raw(rekeyed).execute(db);
  await sql`insert into audit_log_leaves_rekeyed select * from audit_log_leaves order by idx`.execute(db);
  await sql`drop table audit_log_leaves`.execute(db);
  await sql`alter table audit_log_leaves_rekeyed rename to audit_log_leaves`.execute(db);
  for (const index of schema.filter((row) => row.type === 'index')) await sql.raw(index.sql!).execute(db);
}

function checkpointOfRow(row: AuditCheckpointRow): Checkpoint {
  return { treeSize: Number(row.tree_size), rootHash: row.root_hash, timestamp: toIso(Number(row.created_at)), keyId: row.key_id, signature: row.signature };
}

/**
 * One service's log: appends (in the caller's transaction), proofs, signed checkpoints and
 * tombstones, and the pushing of checkpoints to witnesses.
 */
export class AuditLog<Schema extends AuditLogTables> {
  readonly name: string;
  readonly key: SigningKey;
  /** The origin line of the log's C2SP checkpoints, and the key name of its note signature. */
  readonly origin: string;
  readonly noteKeyName: string;
  private readonly db: Kysely<AuditLogTables>;
  private readonly witnessQueue: DeliveryQueue<AuditLogTables, 'audit_witness_deliveries'>;
  private sinceCheckpoint = 0;
  /** The map of heads as this instance's last checkpoint left it (commitScopeHeads). */
  private readonly headMap: { current?: HeadMapCache } = {};
  /** SQLite: the thread that drafts and commits large checkpoints' heads leaves (started on first use). */
  private headsThread: HeadsThread | undefined;
  private signing: Promise<unknown> | null = null;
  /** The integrator this instance takes part in (startAuditIntegrator): while it follows, it neither signs nor builds. */
  private integrator: LogIntegrator | undefined;

  /**
   * A service's log as its configuration sets it up (AUDIT_* variables: key, cadence, witnesses).
   * `heads`: the scopes whose heads each checkpoint commits (AuditLogOptions.heads); `onThread`: on
   * SQLite, large checkpoints commit them on a thread of their own (AuditLogOptions.sqlite): the
   * gate's, whose every request is a new scope; not observe's, whose ingest measured no faster with
   * it and ~27 MiB larger.
   */
  static ofService<Schema extends AuditLogTables>(
    name: string,
    config: { dataDir: string; audit: AuditLogConfig },
    database: { db: Kysely<Schema>; dialect: DialectName; sqlite?: SqliteFile },
    clock: Clock,
    log: AuditLogOptions<Schema>['log'],
    heads?: { source: ScopeHeadSource; onThread?: boolean },
  ): AuditLog<Schema> {
    const { audit } = config;
    return new AuditLog<Schema>({
      name,
      db: database.db,
      dialect: database.dialect,
      key: loadSigningKey(audit.signingKey, config.dataDir),
      ...(audit.previousSigningKey === undefined ? {} : { previousKey: parseSigningKey(audit.previousSigningKey) }),
      clock,
      witnesses: audit.witnesses,
      tlog: audit.tlog,
      checkpointEvents: audit.checkpointEvents,
      checkpointIntervalMs: audit.checkpointIntervalMs,
      log,
      ...(heads === undefined ? {} : { heads: heads.source }),
      ...(database.sqlite === undefined || heads?.onThread !== true ? {} : { sqlite: database.sqlite }),
    });
  }

  constructor(private readonly options: AuditLogOptions<Schema>) {
    this.name = options.name;
    this.key = options.key;
    this.origin = options.tlog?.origin ?? `${options.name}/${options.key.keyId}`;
    this.noteKeyName = options.tlog?.keyName ?? this.origin;
    if (!isKeyName(this.noteKeyName)) throw new Error(`the audit log's note key name "${this.noteKeyName}" has a space or "+": set AUDIT_NOTE_KEY_NAME`);
    this.db = tablesOf<AuditLogTables, Schema>(options.db);
    const { witnesses } = options;
    this.witnessQueue = new DeliveryQueue<AuditLogTables, 'audit_witness_deliveries'>({
      db: this.db,
      table: 'audit_witness_deliveries',
      clock: options.clock,
      log: options.log,
      timeoutMs: witnesses.timeoutMs,
      maxAttempts: WITNESS_MAX_ATTEMPTS,
      retryTimers: true,
      headers: async (row) => {
        const timestamp = Math.floor(options.clock.now() / 1000);
        return {
          'user-agent': `${options.name}/${VIGIL_VERSION}`,
          'x-vigil-event': 'audit.checkpoint',
          'x-vigil-delivery': row.id,
          ...(witnesses.secret !== undefined && {
            'x-vigil-timestamp': String(timestamp),
            'x-vigil-signature': signTimestampedBody(witnesses.secret, timestamp, row.body),
          }),
        };
      },
    });
  }

  /**
   * Records the key's public half, so checkpoints it signed stay verifiable after a rotation. The
   * first time a key is recorded while the previous key (AUDIT_PREVIOUS_SIGNING_KEY), one the log
   * already has, is given, the previous key certifies it: a key-rotation leaf (keyCertificateBody)
   * appended in the same transaction, its signature kept with the new key. A verifier trusting the
   * previous key then trusts this one (docs/audit.md); a key merely inserted into the table is not.
   */
  async registerKey(): Promise<void> {
    const { previousKey: previous } = this.options;
    const now = this.options.clock.now();
    await this.db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('audit_keys')
        .values({ key_id: this.key.keyId, public_key: this.key.publicKey.toString('base64'), created_at: now })
        .onConflict((oc) => oc.column('key_id').doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) !== 1 || previous === undefined || previous.keyId === this.key.keyId) return;
      const known = await trx.selectFrom('audit_keys').select('key_id').where('key_id', '=', previous.keyId).executeTakeFirst();
      if (known === undefined) return;
      const body = keyCertificateBody(this.name, this.key, previous, toIso(now));
      const signature = signBytes(previous, Buffer.from(body, 'utf8'));
      const leaf = await appendLeaves(trx, this.options.dialect, [
        { itemId: newId(), scopeId: null, kind: KEY_ROTATION_LEAF, data: Buffer.from(body, 'utf8') },
      ]);
      await trx
        .updateTable('audit_keys')
        .set({ certificate: body, certificate_signature: signature, certificate_leaf: leaf })
        .where('key_id', '=', this.key.keyId)
        .execute();
    });
  }

  /** Every key that has signed, oldest first, each with its certificate by the key it replaced (null for none). */
  async keys(): Promise<{ keyId: string; publicKey: string; createdAt: number; certificate: { leafIndex: number; body: string; signature: string } | null }[]> {
    const rows = await this.db.selectFrom('audit_keys').selectAll().orderBy('created_at').execute();
    return rows.map((row) => ({
      keyId: row.key_id,
      publicKey: row.public_key,
      createdAt: Number(row.created_at),
      certificate:
        row.certificate === null || row.certificate_signature === null || row.certificate_leaf === null
          ? null
          : { leafIndex: Number(row.certificate_leaf), body: row.certificate, signature: row.certificate_signature },
    }));
  }

  /** Appends leaves in the caller's transaction (appendLeaves). */
  append(trx: Kysely<Schema>, leaves: readonly LeafInput[]): Promise<number> {
    return appendLeaves(trx, this.options.dialect, leaves);
  }

  /**
   * Appends one signed tombstone leaf per deleted chain, in the transaction that deletes it. Its
   * data is the canonical JSON of `body` with {v: 1, kind: "tombstone", log, timestamp, keyId};
   * its signature is the log key's over those bytes.
   */
  async appendTombstones(trx: Kysely<Schema>, tombstones: readonly { scopeId: string; body: Record<string, unknown> }[]): Promise<void> {
    if (tombstones.length === 0) return;
    const timestamp = toIso(this.options.clock.now());
    const signed = tombstones.map(({ scopeId, body }) => {
      const text = canonicalJson({ ...body, v: 1, kind: 'tombstone', log: this.name, timestamp, keyId: this.key.keyId });
      return { scopeId, text, signature: signBytes(this.key, Buffer.from(text, 'utf8')) };
    });
    const start = await this.append(
      trx,
      signed.map((t) => ({ itemId: newId(), scopeId: t.scopeId, kind: TOMBSTONE_LEAF, data: Buffer.from(t.text, 'utf8') })),
    );
    await tablesOf<AuditLogTables, Schema>(trx)
      .insertInto('audit_tombstones')
      .values(signed.map((t, i) => ({ leaf_idx: start + i, scope_id: t.scopeId, body: t.text, signature: t.signature })))
      .execute();
  }

  /** How many leaves the log has (every one committed). */
  async size(): Promise<number> {
    const row = await this.db.selectFrom('audit_log_head').select('size').where('id', '=', 1).executeTakeFirstOrThrow();
    return Number(row.size);
  }

  /**
   * Builds the inner nodes up to `size` (buildNodes); roots and proofs call it first. An instance
   * that follows the integrator's leader builds nothing: it wakes the leader and waits until the
   * nodes are built (the leader's next checkpoint builds them).
   */
  async build(size: number): Promise<void> {
    const built = async () => Number((await this.db.selectFrom('audit_log_built').select('size').where('id', '=', 1).executeTakeFirstOrThrow()).size) >= size;
    if (this.following && !(await this.awaitLeader(built))) return;
    return buildNodes({ db: this.db, dialect: this.options.dialect }, size);
  }

  /** Whether this instance takes part in an integrator and follows its leader. */
  private get following(): boolean {
    return this.integrator !== undefined && !this.integrator.leading();
  }

  /**
   * While this instance follows: wakes the leader (again every second) and waits until `done`
   * holds, answering true when this instance took the lead meanwhile (then it does the work itself).
   */
  private async awaitLeader(done: () => Promise<boolean>): Promise<boolean> {
    const started = Date.now();
    let woken = 0;
    for (;;) {
      if (await done()) return false;
      if (!this.following) return true;
      if (Date.now() - woken >= LEADER_WAKE_MS) {
        woken = Date.now();
        await this.integrator!.wake();
      }
      if (Date.now() - started > LEADER_WAIT_MS)
        throw new Error(`no instance led the audit log's integrator for ${LEADER_WAIT_MS / 1000} s (its leader signs checkpoints and builds the log's nodes)`);
      await new Promise((resolve) => setTimeout(resolve, LEADER_POLL_MS));
    }
  }

  /** Makes this instance take part in an integrator (startAuditIntegrator). */
  attachIntegrator(integrator: LogIntegrator): void {
    this.integrator = integrator;
  }

  /**
   * The integrator leader's round: a checkpoint, one at a time on this instance, when `asked` (an
   * instance woke the leader because it needs one) and the log has leaves past the latest, or when
   * the log grew by `checkpointEvents` since it, or grew at all since it was `checkpointIntervalMs` old.
   */
  async integrate(asked: boolean): Promise<void> {
    const latest = await this.findCheckpoint();
    const size = await this.size();
    if (latest === undefined ? size === 0 && !asked : latest.treeSize >= size) return;
    // Unasked, a round signs once the whole log (every instance's leaves) grew by AUDIT_CHECKPOINT_EVENTS, or grew
    // at all since a checkpoint AUDIT_CHECKPOINT_INTERVAL_MS old: a busy log is signed about every round, a quiet
    // one no more often than before the integrator (a checkpoint a round would store two a second of a trickle).
    if (!asked && latest !== undefined && size - latest.treeSize < this.options.checkpointEvents) {
      const age = this.options.clock.now() - Date.parse(latest.timestamp);
      if (age < (this.options.checkpointIntervalMs ?? 0)) return;
    }
    await this.signInBackground();
  }

  /** Signs a checkpoint unless this instance is signing one; resolves once that signing ends (failures logged). */
  private signInBackground(): Promise<unknown> {
    this.signing ??= this.checkpoint()
      .catch((error: unknown) => this.options.log.error({ err: error }, 'audit checkpoint failed'))
      .finally(() => (this.signing = null));
    return this.signing;
  }

  async rootAt(size: number): Promise<Buffer> {
    await this.build(size);
    return withStoredNodes(this.db, (read) => treeRoot(size, read));
  }

  /** `checkpointed`: `size` is a checkpoint's, so its nodes are built (signing built them) and nothing is checked first. */
  async inclusionPath(index: number, size: number, checkpointed = false): Promise<Buffer[]> {
    if (!checkpointed) await this.build(size);
    return withStoredNodes(this.db, (read) => inclusionProof(index, size, read));
  }

  /**
   * Inclusion proofs of many leaves in the tree of `size` leaves (an export's), reading the stored
   * nodes they share once, a few hundred per query, instead of two queries per proof.
   */
  async inclusionPaths(indices: readonly number[], size: number): Promise<Buffer[][]> {
    await this.build(size);
    const needed = new Map<number, NodeRef>();
    for (const index of indices) for (const ref of nodesNeeded((read) => inclusionProof(index, size, read))) needed.set(nodeKey(ref.level, ref.index), ref);
    const read = await readNodes(this.db, [...needed.values()]);
    return indices.map((index) => inclusionProof(index, size, read));
  }

  async consistencyPath(from: number, to: number): Promise<Buffer[]> {
    if (from === 0) return [];
    await this.build(to);
    return withStoredNodes(this.db, (read) => consistencyProof(from, to, read));
  }

  /** The leaf of an item: its index and leaf hash; undefined when the item has none. */
  async leafOf(itemId: string): Promise<{ index: number; leafHash: string } | undefined> {
    const row = await leafOfItem.first(this.db, this.options.dialect, itemId);
    return row === undefined ? undefined : { index: Number(row.idx), leafHash: hashHex(row.leaf_hash) };
  }

  /** The leaves of several items, by item id (readLeavesOf). */
  leavesOf(itemIds: readonly string[]): Promise<Map<string, { index: number; leafHash: string }>> {
    return readLeavesOf(this.db, itemIds);
  }

  /** Leaves `from`, `from + 1`, … (at most `limit`), in order: an index range, with the tombstones among them. */
  async leaves(from: number, limit: number): Promise<StoredLeaf[]> {
    const rows = await this.db
      .selectFrom('audit_log_leaves as l')
      .leftJoin('audit_tombstones as t', 't.leaf_idx', 'l.idx')
      .select(['l.idx', 'l.item_id', 'l.scope_id', 'l.leaf_hash', 'l.kind', 't.body', 't.signature'])
      .where('l.idx', '>=', from)
      .where('l.idx', '<', from + limit)
      .orderBy('l.idx')
      .execute();
    return rows.map((row) => ({
      index: Number(row.idx),
      itemId: row.item_id,
      scopeId: row.scope_id,
      leafHash: hashHex(row.leaf_hash),
      kind: row.kind,
      tombstone: row.body === null || row.signature === null ? null : { body: row.body, signature: row.signature },
    }));
  }

  /**
   * The checkpoints signed from `from` to `to` (epoch ms, inclusive) in tree-size order, with the
   * last one before `from` first (what the period's first checkpoint extends), each with its C2SP
   * note and the cosignature lines stored for it; at most `limit`.
   */
  async checkpointsBetween(
    from: number,
    to: number,
    limit: number,
  ): Promise<{ checkpoints: { checkpoint: Checkpoint; note: string | null; cosignatures: string[] }[]; truncated: boolean }> {
    const before = await this.db.selectFrom('audit_checkpoints').selectAll().where('created_at', '<', from).orderBy('tree_size', 'desc').limit(1).execute();
    const within = await this.db
      .selectFrom('audit_checkpoints')
      .selectAll()
      .where('created_at', '>=', from)
      .where('created_at', '<=', to)
      .orderBy('tree_size')
      .limit(limit + 1)
      .execute();
    const rows = [...before, ...within.slice(0, limit)];
    const sizes = rows.map((row) => Number(row.tree_size));
    const lines = new Map<number, string[]>();
    if (sizes.length > 0) {
      const cosignatures = await this.db
        .selectFrom('audit_cosignatures')
        .select(['tree_size', 'line'])
        .where('tree_size', 'in', sizes)
        .orderBy('tree_size')
        .orderBy('key_name')
        .orderBy('key_hash')
        .execute();
      for (const { tree_size: size, line } of cosignatures) lines.set(Number(size), [...(lines.get(Number(size)) ?? []), line]);
    }
    return {
      checkpoints: rows.map((row) => ({ checkpoint: checkpointOfRow(row), note: row.note, cosignatures: lines.get(Number(row.tree_size)) ?? [] })),
      truncated: within.length > limit,
    };
  }

  /** The signed retention tombstones whose timestamp lies from `from` to `to` (ISO 8601, inclusive), in log order. */
  async tombstonesBetween(from: string, to: string): Promise<{ leafIndex: number; scopeId: string; body: string; signature: string }[]> {
    const rows = await this.db.selectFrom('audit_tombstones').selectAll().orderBy('leaf_idx').execute();
    return rows
      .map((row) => ({ leafIndex: Number(row.leaf_idx), scopeId: row.scope_id, body: row.body, signature: row.signature }))
      .filter((row) => {
        const timestamp = (JSON.parse(row.body) as { timestamp?: unknown }).timestamp;
        return typeof timestamp === 'string' && timestamp >= from && timestamp <= to;
      });
  }

  /** Signs an evidence pack's manifest digest with the log's key (evidenceManifestMessage). */
  signEvidenceManifest(manifestSha256: string): { log: string; keyId: string; publicKey: string; timestamp: string; signature: string } {
    const timestamp = toIso(this.options.clock.now());
    const signed = { manifestSha256, timestamp, keyId: this.key.keyId };
    return {
      log: this.name,
      keyId: this.key.keyId,
      publicKey: this.key.publicKey.toString('base64'),
      timestamp,
      signature: signBytes(this.key, evidenceManifestMessage(this.name, signed)),
    };
  }

  /** The latest checkpoint, or the one at `treeSize`. */
  async findCheckpoint(treeSize?: number): Promise<Checkpoint | undefined> {
    const { dialect } = this.options;
    const row = treeSize === undefined ? await latestCheckpoint.first(this.db, dialect) : await checkpointAt.first(this.db, dialect, treeSize);
    return row === undefined ? undefined : checkpointOfRow(row);
  }

  /**
   * Signs a checkpoint at the log's current size, unless one exists at that size (then that one is
   * answered: two instances checkpointing together store one). A new checkpoint is queued to the
   * witness webhooks in the transaction that stores it and appended to the witness file.
   */
  async checkpoint(): Promise<Checkpoint> {
    if (this.following) {
      // The leader signs: wait for a checkpoint covering every leaf there is now.
      const size = await this.size();
      let covering: Checkpoint | undefined;
      const signed = async () => {
        covering = await this.findCheckpoint();
        return covering !== undefined && covering.treeSize >= size;
      };
      if (!(await this.awaitLeader(signed))) return covering!;
    }
    const treeSize = await this.commitHeads();
    const existing = await this.findCheckpoint(treeSize);
    if (existing !== undefined) return existing;
    const now = this.options.clock.now();
    const unsigned = { treeSize, rootHash: (await this.rootAt(treeSize)).toString('hex'), timestamp: toIso(now), keyId: this.key.keyId };
    const checkpoint: Checkpoint = { ...unsigned, signature: signBytes(this.key, checkpointMessage(this.name, unsigned)) };
    const noteText = formatCheckpointBody({ origin: this.origin, treeSize, rootHash: Buffer.from(unsigned.rootHash, 'hex') });
    const note = formatNote({ text: noteText, signatures: [signNoteText(noteText, this.noteKeyName, this.key)] });
    const body = JSON.stringify({ type: 'audit.checkpoint', log: this.name, checkpoint, publicKey: this.key.publicKey.toString('base64') });
    const { urls } = this.options.witnesses;
    const inserted = await this.db.transaction().execute(async (trx) => {
      const result = await trx
        .insertInto('audit_checkpoints')
        .values({ tree_size: treeSize, root_hash: unsigned.rootHash, created_at: now, key_id: this.key.keyId, signature: checkpoint.signature, note })
        .onConflict((oc) => oc.column('tree_size').doNothing())
        .executeTakeFirst();
      if (Number(result.numInsertedOrUpdatedRows ?? 0) !== 1) return null;
      const rows = urls.map((url) => ({ ...newDelivery(url, body, now), tree_size: treeSize }));
      if (rows.length > 0) await trx.insertInto('audit_witness_deliveries').values(rows).execute();
      return rows.map((row) => row.id);
    });
    // Another instance stored one at this size first: that one is the checkpoint (and it witnessed it).
    if (inserted === null) return (await this.findCheckpoint(treeSize))!;
    await this.witness(body, inserted);
    return checkpoint;
  }

  /**
   * The size to sign: the log's, after a heads leaf committing the scopes' heads when the service
   * records them (commitScopeHeads). The map's changed buckets are read back and rehashed first,
   * without the log's lock (prepareScopeHeads); under it only the scopes with a leaf since are. On
   * SQLite a large checkpoint does both on the heads thread, so the serving thread keeps serving.
   */
  private async commitHeads(): Promise<number> {
    const { heads, dialect, sqlite } = this.options;
    if (heads === undefined) return this.size();
    if (sqlite !== undefined && (await leavesSinceHeadsLeaf(this.db)) >= (sqlite.headsThreadFrom ?? HEADS_THREAD_FROM)) {
      this.headsThread ??= new HeadsThread({ sqlite: { file: sqlite.file, synchronous: sqlite.synchronous }, log: this.name, source: heads });
      const thread = this.headsThread;
      try {
        await thread.prepare();
        // Held, this connection has no transaction open, so the thread's write lock waits for none of this
        // thread's, and none of this thread's writes waits on the lock (they wait, without blocking, for the connection).
        return await this.db.connection().execute(() => thread.commit());
      } catch (error) {
        // A thread that failed (or could not start) leaves the checkpoint to this thread: a commit it made
        // ended the log with a heads leaf, which the step here then finds and leaves as it is.
        this.options.log.warn({ err: error }, 'the audit heads thread failed: the checkpoint commits its heads here');
      }
    }
    const draft = await prepareScopeHeads({ db: this.db, dialect }, this.name, heads, this.headMap);
    return commitScopeHeads(
      { db: this.db, dialect },
      this.name,
      heads,
      (trx, data, itemId) => appendLeaves(trx, dialect, [{ itemId, scopeId: null, kind: HEADS_LEAF, data }]),
      { cache: this.headMap, draft },
    );
  }

  private async witness(body: string, deliveries: readonly string[]): Promise<void> {
    this.witnessQueue.dispatch(deliveries);
    const { file } = this.options.witnesses;
    if (file === undefined) return;
    try {
      await appendFile(file, `${body}\n`, 'utf8');
    } catch (error) {
      this.options.log.error({ err: error, file }, 'audit checkpoint could not be appended to the witness file');
    }
  }

  /**
   * After the commit of `count` leaves: a checkpoint, in the background, once `checkpointEvents`
   * were committed through this instance; signed here, or by the integrator's leader, which this
   * instance wakes while it follows.
   */
  committed(count: number): void {
    this.sinceCheckpoint += count;
    if (this.sinceCheckpoint < this.options.checkpointEvents || this.signing !== null) return;
    this.sinceCheckpoint = 0;
    if (this.following) {
      this.integrator!.wake().catch((error: unknown) => this.options.log.warn({ err: error }, 'audit integrator could not be woken'));
      return;
    }
    void this.signInBackground();
  }

  /**
   * The periodic job's work (AUDIT_CHECKPOINT_INTERVAL_MS, one instance at a time): a checkpoint
   * when the log has grown since the latest, then the witness deliveries left due (after a
   * restart, or retries another instance left).
   */
  async checkpointIfGrown(): Promise<void> {
    const latest = await this.findCheckpoint();
    // A follower of the integrator leaves signing to its leader (which signs far more often than this job runs).
    if (!this.following && (latest?.treeSize ?? -1) < (await this.size())) await this.checkpoint();
    await this.witnessQueue.deliverDue();
    await this.requestCosignatures();
  }

  /** The verifier key of the log's note signatures (signed-note: `name+hash+base64`). */
  get noteVerifierKey(): string {
    return formatVerifierKey({ name: this.noteKeyName, type: NOTE_ED25519, publicKey: this.key.publicKey });
  }

  /**
   * The latest checkpoint signed as a note, with the cosignatures stored for it appended (the
   * signed note C2SP clients fetch at `<prefix>/checkpoint`); undefined before the first one.
   */
  async checkpointNote(): Promise<{ treeSize: number; note: string } | undefined> {
    const row = await this.db
      .selectFrom('audit_checkpoints')
      .select(['tree_size', 'note'])
      .where('note', 'is not', null)
      .orderBy('tree_size', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (row?.note == null) return undefined;
    const treeSize = Number(row.tree_size);
    const cosignatures = await this.db
      .selectFrom('audit_cosignatures')
      .select('line')
      .where('tree_size', '=', treeSize)
      .orderBy('key_name')
      .orderBy('key_hash')
      .execute();
    return { treeSize, note: row.note + cosignatures.map((cosignature) => cosignature.line).join('') };
  }

  /**
   * Stores the witnesses' cosignatures of a checkpoint note the log signed: `note` is that note
   * (its text byte for byte) with signature lines, each either the log's own or a valid v1
   * cosignature by a configured witness (AUDIT_COSIGNERS). Anything else refuses the whole note,
   * nothing stored (CosignatureRefused). Answers its tree size and how many cosignatures were new.
   */
  async addCosignatures(note: string): Promise<{ treeSize: number; added: number }> {
    let parsed;
    try {
      parsed = parseNote(note);
      parseCheckpointBody(parsed.text);
    } catch (error) {
      throw new CosignatureRefused(`not a signed checkpoint note: ${(error as Error).message}`);
    }
    const treeSize = Number(parsed.text.split('\n')[1]);
    const row = await this.db.selectFrom('audit_checkpoints').select('note').where('tree_size', '=', treeSize).executeTakeFirst();
    if (row?.note == null || parseNote(row.note).text !== parsed.text)
      throw new CosignatureRefused(`the log signed no checkpoint note with this text at tree size ${treeSize}`);
    const own = parseNote(row.note).signatures[0]!;
    const rows: AuditCosignatureRow[] = [];
    for (const signature of parsed.signatures) {
      if (formatSignatureLine(signature) === formatSignatureLine(own)) continue;
      const cosigner = this.cosigners.find((candidate) => sameKey(signature, candidate.key));
      if (cosigner === undefined) throw new CosignatureRefused(`${signature.name}+${signature.keyHash} is not a witness of this log (AUDIT_COSIGNERS)`);
      const time = verifyCosignature(parsed.text, signature, cosigner.key);
      if (time === undefined) throw new CosignatureRefused(`the cosignature of ${signature.name}+${signature.keyHash} does not verify`);
      rows.push({ tree_size: treeSize, key_name: signature.name, key_hash: signature.keyHash, cosigned_at: time, line: formatSignatureLine(signature) });
    }
    if (rows.length === 0) return { treeSize, added: 0 };
    const result = await this.db
      .insertInto('audit_cosignatures')
      .values(rows)
      .onConflict((oc) => oc.columns(['tree_size', 'key_name', 'key_hash']).doNothing())
      .executeTakeFirst();
    return { treeSize, added: Number(result.numInsertedOrUpdatedRows ?? 0) };
  }

  private get cosigners(): readonly AuditCosigner[] {
    return this.options.tlog?.cosigners ?? [];
  }

  /**
   * The hashes of a tlog-tiles hash tile, concatenated (32 bytes each), when the tile lies within
   * the latest checkpoint's tree; undefined otherwise. Level 0 holds leaf hashes, level L the
   * roots of the perfect subtrees of 256^L leaves (stored nodes, level 8·L ≥ STORED_LEVEL).
   */
  async tile(tile: TileRef): Promise<Buffer | undefined> {
    const latest = await this.findCheckpoint();
    if (latest === undefined || !tileWithin(tile, latest.treeSize)) return undefined;
    const { level, from, count } = tileNodes(tile);
    const rows =
      level === 0
        ? await this.db
            .selectFrom('audit_log_leaves')
            .select(['idx', 'leaf_hash as hash'])
            .where('idx', '>=', from)
            .where('idx', '<', from + count)
            .orderBy('idx')
            .execute()
        : await this.db
            .selectFrom('audit_log_nodes')
            .select(['idx', 'hash'])
            .where('level', '=', level)
            .where('idx', '>=', from)
            .where('idx', '<', from + count)
            .orderBy('idx')
            .execute();
    if (rows.length !== count) throw new AuditLogIncompleteError(missingNode(level, firstGap(rows, from)));
    return Buffer.concat(rows.map((row) => hashOf(row.hash)));
  }

  /**
   * The witness client (tlog-witness): submits the latest checkpoint note to every witness with a
   * URL, with a consistency proof from the size the witness last cosigned (our stored cosignatures
   * say which; a 409 answer names the witness's own, and is retried from it once), and stores the
   * cosignatures it answers. Runs in the leased checkpoint job; one witness failing never stops the others.
   */
  async requestCosignatures(): Promise<void> {
    const asked = this.cosigners.filter((cosigner) => cosigner.url !== undefined);
    if (asked.length === 0) return;
    const latest = await this.checkpointNote();
    if (latest === undefined) return;
    for (const cosigner of asked) {
      try {
        await this.requestCosignature(cosigner, latest);
      } catch (error) {
        this.options.log.warn({ err: error, witness: cosigner.url }, 'audit checkpoint cosignature request failed');
      }
    }
  }

  private async requestCosignature(cosigner: AuditCosigner, latest: { treeSize: number; note: string }): Promise<void> {
    const { key } = cosigner;
    const cosigned = await this.db
      .selectFrom('audit_cosignatures')
      .select((eb) => eb.fn.max('tree_size').as('size'))
      .where('key_name', '=', key.name)
      .where('key_hash', '=', noteKeyHash(key))
      .executeTakeFirst();
    if (cosigned?.size != null && Number(cosigned.size) >= latest.treeSize) return;
    // The note as the log signed it, without the other witnesses' cosignatures.
    const own = parseNote(latest.note);
    const note = formatNote({ text: own.text, signatures: [own.signatures[0]!] });
    let old = cosigned?.size == null ? 0 : Number(cosigned.size);
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const proof = await this.consistencyPath(old, latest.treeSize);
      const body = `old ${old}\n${proof.map((hash) => `${hash.toString('base64')}\n`).join('')}\n${note}`;
      const response = await fetch(`${cosigner.url!}/add-checkpoint`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'text/plain; charset=utf-8', 'user-agent': `${this.name}/${VIGIL_VERSION}` },
        signal: AbortSignal.timeout(this.options.witnesses.timeoutMs),
      });
      const text = await response.text();
      if (response.status === 409 && attempt === 0 && /^(0|[1-9][0-9]*)\n$/.test(text) && Number(text) <= latest.treeSize && Number(text) !== old) {
        old = Number(text);
        continue;
      }
      if (response.status !== 200) throw new Error(`the witness answered ${response.status}: ${text.slice(0, 200)}`);
      const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : [text];
      // A witness's answer may carry cosignatures of other keys: only its own, verified, are kept (the spec says ignore the rest).
      const own = lines.map(parseSignatureLine).filter((signature) => sameKey(signature, key));
      if (own.length === 0) throw new Error('the witness answered no cosignature of its configured key');
      await this.addCosignatures(note + own.map(formatSignatureLine).join(''));
      return;
    }
  }

  /** Waits for a checkpoint being signed and witness deliveries in flight (shutdown, tests). */
  async stop(): Promise<void> {
    await this.signing;
    await this.witnessQueue.stop();
    await this.headsThread?.close();
  }
}
