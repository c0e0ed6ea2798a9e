import { sql, type Kysely } from 'kysely';
import {
  byScope,
  HEAD_MAP_BUCKETS,
  headBucketCount,
  headBucketTextHash,
  headBucketKeys,
  headBucketOf,
  headBucketOfKey,
  headEntryText,
  headKeyOf,
  HeadMapTree,
  headsLeafText,
  parseHeadsLeaf,
  type ScopeHead,
} from './audit-heads-format.ts';
import { BulkInserter, forUpdate, tablesOf, type DialectName, type MigrationDb } from './db.ts';
import { newId } from './ids.ts';
import { hashHex } from './stored-hash.ts';

/**
 * The map of scope heads as the service keeps it (docs/audit.md, "Session heads"): every version
 * of each scope's entry and of each bucket's hash, by the index of the heads leaf that committed it,
 * so that the map as any checkpoint committed it can be proven later (an export `since` a saved
 * checkpoint). Written when a checkpoint is signed (commitScopeHeads), never on the ingest path.
 */

/**
 * A scope's head as committed by the heads leaf at `tree_size` (head_seq −1, hash null: the scope
 * no longer exists); `head_key` is its headKeyOf, which names its bucket under every bucket count.
 */
export interface AuditHeadEntryRow {
  scope_id: string;
  tree_size: number;
  head_key: number;
  head_seq: number;
  head_hash: string | null;
}

/**
 * A bucket's hash (hex) as committed by the heads leaf at `tree_size`. `bucket` is heap-numbered,
 * buckets + b for bucket b of a map of `buckets` buckets, so the rows of every bucket count the map
 * has had keep apart.
 */
export interface AuditHeadBucketRow {
  bucket: number;
  tree_size: number;
  hash: string;
}

/**
 * A bucket as the latest heads leaf left it: its entries' texts, each followed by "\n", in scope
 * order — the bytes its hash covers (headBucketHash). `bucket` is heap-numbered like the hashes'.
 * What a checkpoint reads back of a changed bucket, one row instead of its entries' versions.
 */
export interface AuditHeadBucketTextRow {
  bucket: number;
  tree_size: number;
  entries: string;
}

/** A heads leaf: its index, its data (headsLeafText) and how many scopes its map holds (null: written before it was counted). */
export interface AuditHeadMapRow {
  leaf_idx: number;
  body: string;
  scopes: number | null;
}

export interface AuditHeadTables {
  audit_head_entries: AuditHeadEntryRow;
  audit_head_buckets: AuditHeadBucketRow;
  audit_head_maps: AuditHeadMapRow;
  audit_head_bucket_texts: AuditHeadBucketTextRow;
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

/**
 * Migration step body (observe 0040, the gate 0024): a map whose buckets can double. Entries are
 * keyed by the first 24 bits of their scope's hash instead of their 12-bit bucket, bucket hashes
 * heap-numbered (4,096 + b), and heads leaves count their map's scopes.
 */
export async function rekeyHeadMap(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('audit_head_entries').renameColumn('bucket', 'head_key').execute();
  await db.schema.dropIndex('audit_head_entries_bucket').execute();
  const scopes = (await db.selectFrom('audit_head_entries').select('scope_id').distinct().execute()) as { scope_id: string }[];
  for (const { scope_id } of scopes)
    await db
      .updateTable('audit_head_entries')
      .set({ head_key: headKeyOf(scope_id) })
      .where('scope_id', '=', scope_id)
      .execute();
  await db.schema.createIndex('audit_head_entries_key').on('audit_head_entries').columns(['head_key', 'tree_size']).execute();
  await db
    .updateTable('audit_head_buckets')
    .set({ bucket: sql`bucket + ${HEAD_MAP_BUCKETS}` })
    .execute();
  await db.schema.alterTable('audit_head_maps').addColumn('scopes', 'bigint').execute();
}

/**
 * Migration step body (observe 0046, the gate 0026): each bucket's current entries as one row
 * (AuditHeadBucketTextRow). Left empty here: a checkpoint reads a bucket without its row from the
 * entries' versions, as before, and writes the row.
 */
export async function addHeadBucketTexts(db: MigrationDb): Promise<void> {
  await db.schema
    .createTable('audit_head_bucket_texts')
    .addColumn('bucket', 'integer', (c) => c.primaryKey())
    .addColumn('tree_size', 'bigint', (c) => c.notNull())
    .addColumn('entries', 'text', (c) => c.notNull())
    .execute();
}

const entryInserter = new BulkInserter<AuditHeadTables, 'audit_head_entries'>('audit_head_entries', {
  scope_id: 'text',
  tree_size: 'bigint',
  head_key: 'integer',
  head_seq: 'bigint',
  head_hash: 'text',
});
const bucketInserter = new BulkInserter<AuditHeadTables, 'audit_head_buckets'>('audit_head_buckets', { bucket: 'integer', tree_size: 'bigint', hash: 'text' });
const bucketTextInserter = new BulkInserter<AuditHeadTables, 'audit_head_bucket_texts'>('audit_head_bucket_texts', {
  bucket: 'integer',
  tree_size: 'bigint',
  entries: 'text',
});

type HeadDb = Kysely<AuditHeadTables & { audit_log_head: { id: number; size: number } }>;

/**
 * The latest version at or before the heads leaf at `asOf` of each entry the condition selects
 * (`e`: the entry), the condition applying to that latest version: for reads of the whole map.
 */
async function entriesAt(db: HeadDb, where: ReturnType<typeof sql>, asOf: number): Promise<{ scopeId: string; key: number; head: ScopeHead }[]> {
  const { rows } = await sql<{ scope_id: string; head_key: number; head_seq: number; head_hash: string | null }>`
    select e.scope_id, e.head_key, e.head_seq, e.head_hash from audit_head_entries e
    where ${where} and e.tree_size <= ${asOf}
      and not exists (select 1 from audit_head_entries n where n.scope_id = e.scope_id and n.tree_size > e.tree_size and n.tree_size <= ${asOf})`.execute(db);
  return rows.map((row) => ({ scopeId: row.scope_id, key: Number(row.head_key), head: { seq: Number(row.head_seq), hash: row.head_hash } }));
}

/**
 * The same for a few scopes or buckets (`where` names scopes, never versions): every version at or
 * before `asOf` is read and the latest of each scope kept here, which costs less than asking the
 * index, row by row, whether a later version exists (a scope has a handful of versions at most).
 */
async function latestEntriesAt(db: HeadDb, where: ReturnType<typeof sql>, asOf: number): Promise<{ scopeId: string; key: number; head: ScopeHead }[]> {
  const { rows } = await sql<{ scope_id: string; tree_size: number; head_key: number; head_seq: number; head_hash: string | null }>`
    select e.scope_id, e.tree_size, e.head_key, e.head_seq, e.head_hash from audit_head_entries e where ${where} and e.tree_size <= ${asOf}`.execute(db);
  const latest = new Map<string, (typeof rows)[number]>();
  for (const row of rows) {
    const seen = latest.get(row.scope_id);
    if (seen === undefined || Number(row.tree_size) > Number(seen.tree_size)) latest.set(row.scope_id, row);
  }
  return [...latest.values()].map((row) => ({ scopeId: row.scope_id, key: Number(row.head_key), head: { seq: Number(row.head_seq), hash: row.head_hash } }));
}

/** The entries (present scopes) of `buckets` among `count` as the heads leaf at `asOf` left them, by bucket. */
async function bucketEntriesAt(db: HeadDb, buckets: readonly number[], count: number, asOf: number): Promise<Map<number, Map<string, ScopeHead>>> {
  const found = new Map<number, Map<string, ScopeHead>>();
  for (const bucket of buckets) found.set(bucket, new Map());
  for (let i = 0; i < buckets.length; i += 200) {
    const ranges = buckets.slice(i, i + 200).map((bucket) => {
      const { first, last } = headBucketKeys(bucket, count);
      return sql`(e.head_key between ${first} and ${last})`;
    });
    for (const entry of await latestEntriesAt(db, sql`(${sql.join(ranges, sql` or `)})`, asOf))
      if (entry.head.seq >= 0) found.get(headBucketOfKey(entry.key, count))!.set(entry.scopeId, entry.head);
  }
  return found;
}

/** Every bucket's hash among `count` as the heads leaf at index `asOf` committed it (the empty ones left out). */
async function bucketHashesAt(db: HeadDb, count: number, asOf: number): Promise<Map<number, Buffer>> {
  const { rows } = await sql<{ bucket: number; hash: string }>`
    select b.bucket, b.hash from audit_head_buckets b where b.bucket >= ${count} and b.bucket < ${2 * count} and b.tree_size <= ${asOf}
      and not exists (select 1 from audit_head_buckets n where n.bucket = b.bucket and n.tree_size > b.tree_size and n.tree_size <= ${asOf})`.execute(db);
  return new Map(rows.map((row) => [Number(row.bucket) - count, Buffer.from(row.hash, 'hex')]));
}

function entryTexts(entries: ReadonlyMap<string, ScopeHead>): string[] {
  return [...entries]
    .map(([scopeId, head]) => ({ scopeId, head }))
    .sort(byScope)
    .map(({ scopeId, head }) => headEntryText(scopeId, head));
}

/** A bucket being changed: each present scope's entry text (headEntryText), by scope. */
type BucketTexts = Map<string, string>;

/** The scope of an entry text: its last member, `"scope":<string>`. */
function scopeOfEntryText(text: string): string {
  return JSON.parse(text.slice(text.lastIndexOf(',"scope":') + 9, -1)) as string;
}

/** A bucket's stored text (AuditHeadBucketTextRow.entries): its entries in scope order, each followed by "\n". */
function bucketText(entries: BucketTexts): string {
  // Joined, not appended: a flat string, which the hash and the insert take without flattening it.
  return [...entries.keys()]
    .sort()
    .map((scopeId) => `${entries.get(scopeId)!}\n`)
    .join('');
}

/**
 * The entries of `buckets` among `count` as the heads leaf at `asOf` (the latest) left them: from
 * each bucket's row where it has one, else from the entries' versions.
 */
async function currentBucketTexts(db: HeadDb, buckets: readonly number[], count: number, asOf: number): Promise<Map<number, BucketTexts>> {
  const found = new Map<number, BucketTexts>();
  for (let i = 0; i < buckets.length; i += 500) {
    const rows = await db
      .selectFrom('audit_head_bucket_texts')
      .select(['bucket', 'entries'])
      .where(
        'bucket',
        'in',
        buckets.slice(i, i + 500).map((bucket) => count + bucket),
      )
      .execute();
    for (const row of rows) {
      const entries: BucketTexts = new Map();
      for (const text of row.entries.split('\n')) if (text !== '') entries.set(scopeOfEntryText(text), text);
      found.set(Number(row.bucket) - count, entries);
    }
  }
  const missing = buckets.filter((bucket) => !found.has(bucket));
  for (const [bucket, heads] of await bucketEntriesAt(db, missing, count, asOf))
    found.set(bucket, new Map([...heads].map(([scopeId, head]) => [scopeId, headEntryText(scopeId, head)])));
  return found;
}

/** The map as the heads leaf at `leafIndex` left it: what an instance keeps between its checkpoints (commitScopeHeads). */
export interface HeadMapCache {
  leafIndex: number;
  tree: HeadMapTree;
  scopes: number;
}

/** How many scopes the map held at the heads leaf at `asOf` (for leaves stored before they were counted). */
async function countScopesAt(db: HeadDb, asOf: number): Promise<number> {
  return (await entriesAt(db, sql`e.head_seq >= 0`, asOf)).length;
}

/**
 * Before a checkpoint: under the lock on the log's head (held to the commit, so no leaf is
 * appended meanwhile), the heads of the scopes with a leaf since the last heads leaf are read and
 * their changes written into the map, and a heads leaf committing the map's root is appended as the
 * log's last leaf. Answers the tree size to sign: the log's size, ending with a heads leaf (left as
 * it is when its last leaf is one already). `append` appends the leaf in the transaction.
 *
 * Only the changed scopes' buckets are read back and rehashed; when the map outgrows its buckets
 * (headBucketCount), every entry is read once and bucketed anew under twice as many.
 */
export async function commitScopeHeads<Schema extends AuditHeadTables & { audit_log_head: { id: number; size: number } }>(
  database: { db: Kysely<Schema>; dialect: DialectName },
  log: string,
  source: ScopeHeadSource,
  append: (trx: Kysely<Schema>, data: Buffer, itemId: string) => Promise<number>,
  cache: { current?: HeadMapCache } = {},
): Promise<number> {
  const committed = await database.db.transaction().execute(async (trx): Promise<number | HeadMapCache> => {
    const db = tablesOf<AuditHeadTables & { audit_log_head: { id: number; size: number } }, Schema>(trx);
    const size = Number((await forUpdate(db.selectFrom('audit_log_head').select('size').where('id', '=', 1), database.dialect).executeTakeFirstOrThrow()).size);
    const last = await db
      .selectFrom('audit_head_maps')
      .select(['leaf_idx', 'body', 'scopes'])
      .where('leaf_idx', '<', size)
      .orderBy('leaf_idx', 'desc')
      .limit(1)
      .executeTakeFirst();
    const from = last === undefined ? 0 : Number(last.leaf_idx) + 1;
    if (from >= size) return size;
    const { rows: scoped } = await sql<{ scope_id: string }>`
      select distinct scope_id from audit_log_leaves where idx >= ${from} and idx < ${size} and scope_id is not null`.execute(trx);
    const scopes = scoped.map((row) => row.scope_id);
    const heads = new Map<string, ScopeHead>();
    for (let i = 0; i < scopes.length; i += 500) {
      const chunk = scopes.slice(i, i + 500);
      const { rows } = await sql<{ id: string; head_seq: number; head_hash: string | Buffer | null }>`
        select id, ${sql.ref(source.headSeq)} as head_seq, ${sql.ref(source.headHash)} as head_hash from ${sql.table(source.table)}
        where id in (${sql.join(chunk)})`.execute(trx);
      for (const row of rows)
        heads.set(row.id, {
          seq: Number(row.head_seq),
          hash: row.head_hash === null ? null : typeof row.head_hash === 'string' ? row.head_hash : hashHex(row.head_hash),
        });
    }
    const lastLeaf = last === undefined ? undefined : parseHeadsLeaf(last.body, log);
    const previousCount = lastLeaf?.buckets ?? HEAD_MAP_BUCKETS;
    // The changed scopes' buckets as the last heads leaf left them: each scope's entry there is its previous head.
    const keys = new Map(scopes.map((scopeId) => [scopeId, headKeyOf(scopeId)]));
    const touched = await currentBucketTexts(db, [...new Set([...keys.values()].map((key) => headBucketOfKey(key, previousCount)))], previousCount, size - 1);
    // The scopes whose entry changes: −1 (and no hash) where a scope no longer has a head or a row.
    const changed: AuditHeadEntryRow[] = [];
    // Each changed scope's new entry text, computed once (undefined: the scope leaves the map).
    const newTexts = new Map<string, string | undefined>();
    let scopeDelta = 0;
    for (const [scopeId, key] of keys) {
      const wasText = touched.get(headBucketOfKey(key, previousCount))!.get(scopeId);
      const now = heads.get(scopeId);
      const present = now !== undefined && now.seq >= 0 ? now : undefined;
      const nowText = present === undefined ? undefined : headEntryText(scopeId, present);
      if (wasText === nowText) continue;
      changed.push({ scope_id: scopeId, tree_size: size, head_key: key, head_seq: present?.seq ?? -1, head_hash: present?.hash ?? null });
      newTexts.set(scopeId, nowText);
      scopeDelta += (nowText === undefined ? 0 : 1) - (wasText === undefined ? 0 : 1);
    }
    const lastIndex = last === undefined ? -1 : Number(last.leaf_idx);
    const mine = cache.current?.leafIndex === lastIndex ? cache.current : undefined;
    cache.current = undefined;
    const previousScopes =
      mine?.scopes ?? (last?.scopes !== null && last?.scopes !== undefined ? Number(last.scopes) : last === undefined ? 0 : await countScopesAt(db, size - 1));
    const scopeCount = previousScopes + scopeDelta;
    const count = headBucketCount(previousCount, scopeCount);
    // The changed buckets' entries after the changes, and their stored texts.
    const apply = (entries: Map<number, BucketTexts>): Map<number, string> => {
      for (const row of changed) {
        const inBucket = entries.get(headBucketOfKey(row.head_key, count))!;
        const text = newTexts.get(row.scope_id);
        if (text === undefined) inBucket.delete(row.scope_id);
        else inBucket.set(row.scope_id, text);
      }
      return new Map([...entries].map(([bucket, inBucket]) => [bucket, bucketText(inBucket)]));
    };
    let tree: HeadMapTree | undefined;
    let texts: Map<number, string>;
    if (count === previousCount) {
      // The tree as this instance left it at the last heads leaf, else as the stored bucket hashes give it (another instance's, a start).
      tree = mine?.tree ?? new HeadMapTree(count, await bucketHashesAt(db, count, size - 1));
      // The buckets read above hold the changed ones (and some whose scopes did not change, left out here).
      texts = apply(new Map(changed.map((row) => headBucketOfKey(row.head_key, count)).map((bucket) => [bucket, touched.get(bucket)!])));
    } else {
      // Outgrown: every present entry, bucketed anew; every non-empty bucket's hash and text is written under the new count.
      const entries = new Map<number, BucketTexts>();
      for (const row of changed) entries.set(headBucketOfKey(row.head_key, count), new Map());
      for (const entry of await entriesAt(db, sql`e.head_seq >= 0`, size - 1)) {
        const bucket = headBucketOfKey(entry.key, count);
        let inBucket = entries.get(bucket);
        if (inBucket === undefined) entries.set(bucket, (inBucket = new Map()));
        inBucket.set(entry.scopeId, headEntryText(entry.scopeId, entry.head));
      }
      texts = apply(entries);
      await db.deleteFrom('audit_head_bucket_texts').where('bucket', '<', count).execute();
    }
    const newHashes = new Map([...texts].map(([bucket, text]) => [bucket, headBucketTextHash(text)]));
    if (tree === undefined) tree = new HeadMapTree(count, newHashes);
    else tree.setAll(newHashes);
    const body = headsLeafText(log, size, tree.root, count);
    const index = await append(trx, Buffer.from(body, 'utf8'), newId());
    if (index !== size) throw new Error(`the heads leaf was appended at ${index}, not ${size}: another writer held the log`);
    // The heads leaf at `size` was appended just now, so no version at `size` exists yet.
    const tables = tablesOf<AuditHeadTables, Schema>(trx);
    await entryInserter.insert(tables, database.dialect, changed);
    await bucketInserter.insert(
      tables,
      database.dialect,
      [...newHashes].map(([bucket, bucketHash]) => ({ bucket: count + bucket, tree_size: size, hash: bucketHash.toString('hex') })),
    );
    const textRows = [...texts].map(([bucket, entries]) => ({ bucket: count + bucket, tree_size: size, entries }));
    for (let i = 0; i < textRows.length; i += 500)
      await db
        .deleteFrom('audit_head_bucket_texts')
        .where(
          'bucket',
          'in',
          textRows.slice(i, i + 500).map((row) => row.bucket),
        )
        .execute();
    await bucketTextInserter.insert(tables, database.dialect, textRows);
    await db
      .insertInto('audit_head_maps')
      .values({ leaf_idx: size, body, scopes: scopeCount })
      .onConflict((oc) => oc.column('leaf_idx').doUpdateSet({ body, scopes: scopeCount }))
      .execute();
    return { leafIndex: size, tree, scopes: scopeCount };
  });
  // Kept only once committed: a transaction rolled back leaves the cache empty, and the next checkpoint reads the stored hashes.
  if (typeof committed === 'number') return committed;
  cache.current = committed;
  return committed.leafIndex + 1;
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
  const count = (JSON.parse(map.body) as { buckets: number }).buckets;
  const bucket = headBucketOf(scopeId, count);
  const entries = (await bucketEntriesAt(view, [bucket], count, leafIndex)).get(bucket)!;
  const tree = new HeadMapTree(count, await bucketHashesAt(view, count, leafIndex));
  return { leafIndex, leaf: map.body, bucket, entries: entryTexts(entries), path: tree.path(bucket).map((node) => node.toString('hex')) };
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
