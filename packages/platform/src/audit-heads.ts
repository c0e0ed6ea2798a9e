import { sql, type Kysely } from 'kysely';
import {
  byScope,
  HEAD_MAP_BUCKETS,
  headBucketHash,
  headBucketOf,
  headEntryText,
  headMapPath,
  HeadMapTree,
  headsLeafText,
  type ScopeHead,
} from './audit-heads-format.ts';
import { forUpdate, tablesOf, type DialectName, type MigrationDb } from './db.ts';
import { newId } from './ids.ts';
import { hashHex } from './stored-hash.ts';

/**
 * The map of scope heads as the service keeps it (docs/audit.md, "Session heads"): every version
 * of each scope's entry and of each bucket's hash, by the index of the heads leaf that committed it,
 * so that the map as any checkpoint committed it can be proven later (an export `since` a saved
 * checkpoint). Written when a checkpoint is signed (commitScopeHeads), never on the ingest path.
 */

/** A scope's head as committed by the heads leaf at `tree_size` (head_seq −1, hash null: the scope no longer exists). */
export interface AuditHeadEntryRow {
  scope_id: string;
  tree_size: number;
  bucket: number;
  head_seq: number;
  head_hash: string | null;
}

/** A bucket's hash (hex) as committed by the heads leaf at `tree_size`. */
export interface AuditHeadBucketRow {
  bucket: number;
  tree_size: number;
  hash: string;
}

/** A heads leaf: its index and its data (headsLeafText). */
export interface AuditHeadMapRow {
  leaf_idx: number;
  body: string;
}

export interface AuditHeadTables {
  audit_head_entries: AuditHeadEntryRow;
  audit_head_buckets: AuditHeadBucketRow;
  audit_head_maps: AuditHeadMapRow;
}

/** Where a service records its scopes' heads, e.g. `sessions.last_seq`/`last_hash` (by `id`). */
export interface ScopeHeadSource {
  table: string;
  headSeq: string;
  headHash: string;
}

/** Migration step body: the map's tables (observe 0036, the gate 0022). */
export async function createHeadMapTables(db: MigrationDb): Promise<void> {
  await db.schema
    .createTable('audit_head_entries')
    .addColumn('scope_id', 'text', (c) => c.notNull())
    .addColumn('tree_size', 'bigint', (c) => c.notNull())
    .addColumn('bucket', 'integer', (c) => c.notNull())
    .addColumn('head_seq', 'bigint', (c) => c.notNull())
    .addColumn('head_hash', 'text')
    .addPrimaryKeyConstraint('audit_head_entries_pk', ['scope_id', 'tree_size'])
    .execute();
  await db.schema.createIndex('audit_head_entries_bucket').on('audit_head_entries').columns(['bucket', 'tree_size']).execute();
  await db.schema
    .createTable('audit_head_buckets')
    .addColumn('bucket', 'integer', (c) => c.notNull())
    .addColumn('tree_size', 'bigint', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('audit_head_buckets_pk', ['bucket', 'tree_size'])
    .execute();
  await db.schema
    .createTable('audit_head_maps')
    .addColumn('leaf_idx', 'bigint', (c) => c.primaryKey())
    .addColumn('body', 'text', (c) => c.notNull())
    .execute();
}

type HeadDb = Kysely<AuditHeadTables & { audit_log_head: { id: number; size: number } }>;

/** The entries of `buckets` as the heads leaf at index `asOf` left them (the latest version at or before it), by bucket. */
async function bucketEntriesAt(db: HeadDb, buckets: readonly number[], asOf: number): Promise<Map<number, Map<string, ScopeHead>>> {
  const found = new Map<number, Map<string, ScopeHead>>();
  for (const bucket of buckets) found.set(bucket, new Map());
  for (let i = 0; i < buckets.length; i += 500) {
    const { rows } = await sql<{ scope_id: string; bucket: number; head_seq: number; head_hash: string | null }>`
      select e.scope_id, e.bucket, e.head_seq, e.head_hash from audit_head_entries e
      where e.bucket in (${sql.join(buckets.slice(i, i + 500))}) and e.tree_size <= ${asOf}
        and not exists (select 1 from audit_head_entries n where n.scope_id = e.scope_id and n.tree_size > e.tree_size and n.tree_size <= ${asOf})`.execute(db);
    for (const row of rows) if (Number(row.head_seq) >= 0) found.get(Number(row.bucket))!.set(row.scope_id, { seq: Number(row.head_seq), hash: row.head_hash });
  }
  return found;
}

/** Every bucket's hash as the heads leaf at index `asOf` committed it (an empty bucket's where none was). */
async function bucketHashesAt(db: HeadDb, asOf: number): Promise<Buffer[]> {
  const hashes = Array.from({ length: HEAD_MAP_BUCKETS }, () => headBucketHash([]));
  const { rows } = await sql<{ bucket: number; hash: string }>`
    select b.bucket, b.hash from audit_head_buckets b where b.tree_size <= ${asOf}
      and not exists (select 1 from audit_head_buckets n where n.bucket = b.bucket and n.tree_size > b.tree_size and n.tree_size <= ${asOf})`.execute(db);
  for (const row of rows) hashes[Number(row.bucket)] = Buffer.from(row.hash, 'hex');
  return hashes;
}

function entryTexts(entries: ReadonlyMap<string, ScopeHead>): string[] {
  return [...entries]
    .map(([scopeId, head]) => ({ scopeId, head }))
    .sort(byScope)
    .map(({ scopeId, head }) => headEntryText(scopeId, head));
}

/** The map tree as the heads leaf at `leafIndex` left it: what an instance keeps between its checkpoints (commitScopeHeads). */
export interface HeadMapCache {
  leafIndex: number;
  tree: HeadMapTree;
}

/**
 * Before a checkpoint: under the lock on the log's head (held to the commit, so no leaf is
 * appended meanwhile), the heads of the scopes with a leaf since the last heads leaf are read and
 * their changes written into the map, and a heads leaf committing the map's root is appended as the
 * log's last leaf. Answers the tree size to sign: the log's size, ending with a heads leaf (left as
 * it is when its last leaf is one already). `append` appends the leaf in the transaction.
 */
export async function commitScopeHeads<Schema extends AuditHeadTables & { audit_log_head: { id: number; size: number } }>(
  database: { db: Kysely<Schema>; dialect: DialectName },
  log: string,
  source: ScopeHeadSource,
  append: (trx: Kysely<Schema>, data: Buffer, itemId: string) => Promise<number>,
  cache: { current?: HeadMapCache } = {},
): Promise<number> {
  const committed = await database.db.transaction().execute(async (trx): Promise<number | { size: number; tree: HeadMapTree }> => {
    const db = tablesOf<AuditHeadTables & { audit_log_head: { id: number; size: number } }, Schema>(trx);
    const size = Number((await forUpdate(db.selectFrom('audit_log_head').select('size').where('id', '=', 1), database.dialect).executeTakeFirstOrThrow()).size);
    const last = await db.selectFrom('audit_head_maps').select('leaf_idx').where('leaf_idx', '<', size).orderBy('leaf_idx', 'desc').limit(1).executeTakeFirst();
    const from = last === undefined ? 0 : Number(last.leaf_idx) + 1;
    if (from >= size) return size;
    const { rows: scoped } = await sql<{ scope_id: string }>`
      select distinct scope_id from audit_log_leaves where idx >= ${from} and idx < ${size} and scope_id is not null`.execute(trx);
    const scopes = scoped.map((row) => row.scope_id);
    const heads = new Map<string, ScopeHead>();
    for (let i = 0; i < scopes.length; i += 500) {
      const { rows } = await sql<{ id: string; head_seq: number; head_hash: string | Buffer | null }>`
        select id, ${sql.ref(source.headSeq)} as head_seq, ${sql.ref(source.headHash)} as head_hash from ${sql.table(source.table)}
        where id in (${sql.join(scopes.slice(i, i + 500))})`.execute(trx);
      for (const row of rows)
        heads.set(row.id, {
          seq: Number(row.head_seq),
          hash: row.head_hash === null ? null : typeof row.head_hash === 'string' ? row.head_hash : hashHex(row.head_hash),
        });
    }
    const buckets = [...new Set(scopes.map(headBucketOf))];
    const entries = await bucketEntriesAt(db, buckets, size - 1);
    const changed: AuditHeadEntryRow[] = [];
    for (const scopeId of scopes) {
      const bucket = headBucketOf(scopeId);
      const inBucket = entries.get(bucket)!;
      const before = inBucket.get(scopeId);
      const now = heads.get(scopeId);
      // A scope without a head (−1) or without a row is not in the map.
      const present = now !== undefined && now.seq >= 0 ? now : undefined;
      if (before?.seq === present?.seq && before?.hash === present?.hash) continue;
      if (present === undefined) inBucket.delete(scopeId);
      else inBucket.set(scopeId, present);
      changed.push({ scope_id: scopeId, tree_size: size, bucket, head_seq: present?.seq ?? -1, head_hash: present?.hash ?? null });
    }
    // The tree as this instance left it at the last heads leaf, else as the stored bucket hashes give it (another instance's, a start).
    const lastIndex = last === undefined ? -1 : Number(last.leaf_idx);
    const tree = cache.current?.leafIndex === lastIndex ? cache.current.tree : new HeadMapTree(await bucketHashesAt(db, size - 1));
    cache.current = undefined;
    const changedBuckets = [...new Set(changed.map((row) => row.bucket))];
    const newHashes = new Map(changedBuckets.map((bucket) => [bucket, headBucketHash(entryTexts(entries.get(bucket)!))]));
    tree.setAll(newHashes);
    const body = headsLeafText(log, size, tree.root);
    const index = await append(trx, Buffer.from(body, 'utf8'), newId());
    if (index !== size) throw new Error(`the heads leaf was appended at ${index}, not ${size}: another writer held the log`);
    for (let i = 0; i < changed.length; i += 200)
      await db
        .insertInto('audit_head_entries')
        .values(changed.slice(i, i + 200))
        .onConflict((oc) =>
          oc.columns(['scope_id', 'tree_size']).doUpdateSet((eb) => ({ head_seq: eb.ref('excluded.head_seq'), head_hash: eb.ref('excluded.head_hash') })),
        )
        .execute();
    const bucketRows = changedBuckets.map((bucket) => ({ bucket, tree_size: size, hash: newHashes.get(bucket)!.toString('hex') }));
    for (let i = 0; i < bucketRows.length; i += 300)
      await db
        .insertInto('audit_head_buckets')
        .values(bucketRows.slice(i, i + 300))
        .onConflict((oc) => oc.columns(['bucket', 'tree_size']).doUpdateSet((eb) => ({ hash: eb.ref('excluded.hash') })))
        .execute();
    await db
      .insertInto('audit_head_maps')
      .values({ leaf_idx: size, body })
      .onConflict((oc) => oc.column('leaf_idx').doUpdateSet({ body }))
      .execute();
    return { size: size + 1, tree };
  });
  // Kept only once committed: a transaction rolled back leaves the cache empty, and the next checkpoint reads the stored hashes.
  if (typeof committed !== 'number') cache.current = { leafIndex: committed.size - 1, tree: committed.tree };
  return typeof committed === 'number' ? committed : committed.size;
}

/** What a bundle carries to prove a scope's committed head at a checkpoint (docs/audit.md, "Export bundle"). */
export interface HeadProof {
  leafIndex: number;
  leaf: string;
  bucket: number;
  entries: string[];
  path: string[];
}

/**
 * The map as the heads leaf at `leafIndex` committed it, for one scope: that leaf's data, the
 * scope's bucket whole and its path to the map root; undefined when no heads leaf is stored there.
 */
export async function headProofAt<Schema extends AuditHeadTables & { audit_log_head: { id: number; size: number } }>(
  db: Kysely<Schema>,
  leafIndex: number,
  scopeId: string,
): Promise<HeadProof | undefined> {
  const view = tablesOf<AuditHeadTables & { audit_log_head: { id: number; size: number } }, Schema>(db);
  const map = await view.selectFrom('audit_head_maps').select('body').where('leaf_idx', '=', leafIndex).executeTakeFirst();
  if (map === undefined) return undefined;
  const bucket = headBucketOf(scopeId);
  const entries = (await bucketEntriesAt(view, [bucket], leafIndex)).get(bucket)!;
  const hashes = await bucketHashesAt(view, leafIndex);
  return { leafIndex, leaf: map.body, bucket, entries: entryTexts(entries), path: headMapPath(hashes, bucket).map((node) => node.toString('hex')) };
}

/** The heads leaves' data among leaves `from` … `from + limit − 1`, by index (the audit walk lists them). */
export async function headsLeavesIn<Schema extends AuditHeadTables>(db: Kysely<Schema>, from: number, limit: number): Promise<Map<number, string>> {
  const rows = await tablesOf<AuditHeadTables, Schema>(db)
    .selectFrom('audit_head_maps')
    .select(['leaf_idx', 'body'])
    .where('leaf_idx', '>=', from)
    .where('leaf_idx', '<', from + limit)
    .execute();
  return new Map(rows.map((row) => [Number(row.leaf_idx), row.body]));
}
