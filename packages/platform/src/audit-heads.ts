import { sql, type Kysely } from 'kysely';
import {
  byScope,
  HEAD_MAP_BUCKETS,
  HEAD_SCOPE_MEMBER,
  headBucketCount,
  headBucketText,
  headBucketTextHash,
  headBucketKeys,
  headBucketOf,
  headBucketOfKey,
  headEntryText,
  headKeyOf,
  headScopeMember,
  HeadMapTree,
  headsLeafText,
  parseHeadsLeaf,
  type ScopeHead,
} from './audit-heads-format.ts';
import { BulkInserter, forUpdate, inList, tablesOf, type DialectName, type MigrationDb } from './db.ts';
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
const bucketTextInserter = new BulkInserter<AuditHeadTables, 'audit_head_bucket_texts'>(
  'audit_head_bucket_texts',
  { bucket: 'integer', tree_size: 'bigint', entries: 'text' },
  undefined,
  'bucket',
);

type HeadSchema = AuditHeadTables & { audit_log_head: { id: number; size: number } };
type HeadDb = Kysely<HeadSchema>;

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

/** The scope of an entry text: its last member (HEAD_SCOPE_MEMBER), read as it is when it has no escape. */
function scopeOfEntryText(text: string): string {
  const quoted = text.slice(text.lastIndexOf(HEAD_SCOPE_MEMBER) + HEAD_SCOPE_MEMBER.length, -1);
  return quoted.includes('\\') ? (JSON.parse(quoted) as string) : quoted.slice(1, -1);
}

/**
 * A bucket's text with scope `scopeId`'s entry set to `entry` (undefined: none), and the entry it
 * had. Edited as text, not parsed into entries and joined again: a checkpoint changes one entry in
 * most buckets it touches. The entry is found by its end (headScopeMember), which no other place in
 * a bucket's text can hold (a quote inside a JSON string is escaped); a new one goes where scope
 * order puts it.
 */
function withEntry(text: string, scopeId: string, entry: string | undefined): { text: string; before: string | undefined } {
  const member = headScopeMember(scopeId);
  let start: number;
  let end: number;
  let before: string | undefined;
  const found = text.indexOf(`${member}\n`);
  if (found >= 0) {
    start = text.lastIndexOf('\n', found) + 1;
    end = found + member.length + 1;
    before = text.slice(start, end - 1);
  } else {
    start = 0;
    while (start < text.length) {
      const next = text.indexOf('\n', start);
      if (scopeOfEntryText(text.slice(start, next)) > scopeId) break;
      start = next + 1;
    }
    end = start;
  }
  if (entry === before) return { text, before };
  return { text: text.slice(0, start) + (entry === undefined ? '' : `${entry}\n`) + text.slice(end), before };
}

/**
 * The texts of `buckets` among `count` as the heads leaf at `asOf` (the latest) left them: each
 * bucket's row where it has one, else built from the entries' versions.
 */
async function currentBucketTexts(db: HeadDb, dialect: DialectName, buckets: readonly number[], count: number, asOf: number): Promise<Map<number, string>> {
  const found = new Map<number, string>();
  if (buckets.length > 0) {
    const { rows } = await sql<{ bucket: number; entries: string }>`
      select bucket, entries from audit_head_bucket_texts
      where ${inList(
        dialect,
        sql.ref('bucket'),
        buckets.map((bucket) => count + bucket),
        'integer',
      )}`.execute(db);
    for (const row of rows) found.set(Number(row.bucket) - count, row.entries);
  }
  const missing = buckets.filter((bucket) => !found.has(bucket));
  for (const [bucket, heads] of await bucketEntriesAt(db, missing, count, asOf)) found.set(bucket, headBucketText(entryTexts(heads)));
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

/** The latest heads leaf below `size`. */
function latestHeadsLeaf(db: HeadDb, size: number): Promise<AuditHeadMapRow | undefined> {
  return db
    .selectFrom('audit_head_maps')
    .select(['leaf_idx', 'body', 'scopes'])
    .where('leaf_idx', '<', size)
    .orderBy('leaf_idx', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** The heads of `scopes` as `source` records them now (a scope without a row is left out). */
async function readScopeHeads(db: HeadDb, dialect: DialectName, source: ScopeHeadSource, scopes: readonly string[]): Promise<Map<string, ScopeHead>> {
  const heads = new Map<string, ScopeHead>();
  if (scopes.length === 0) return heads;
  const { rows } = await sql<{ id: string; head_seq: number; head_hash: string | Buffer | null }>`
    select id, ${sql.ref(source.headSeq)} as head_seq, ${sql.ref(source.headHash)} as head_hash from ${sql.table(source.table)}
    where ${inList(dialect, sql.ref('id'), scopes, 'text')}`.execute(db);
  for (const row of rows)
    heads.set(row.id, {
      seq: Number(row.head_seq),
      hash: row.head_hash === null ? null : typeof row.head_hash === 'string' ? row.head_hash : hashHex(row.head_hash),
    });
  return heads;
}

/** An absorbed scope: its head key, and its head at the draft's base and now (undefined: not in the map). */
interface AbsorbedScope {
  key: number;
  was: ScopeHead | undefined;
  head: ScopeHead | undefined;
}

/**
 * The head an entry text states (undefined: no entry). Parsed, not kept as the text: a slice of a
 * bucket's text would keep the whole old text alive for as long as the draft.
 */
function headOfEntry(text: string | undefined): ScopeHead | undefined {
  if (text === undefined) return undefined;
  const entry = JSON.parse(text) as { headHash: string | null; headSeq: number };
  return { seq: entry.headSeq, hash: entry.headHash };
}

function sameHead(a: ScopeHead | undefined, b: ScopeHead | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.seq === b.seq && a.hash === b.hash;
}

/**
 * The next heads leaf in the making: the map as the latest heads leaf (the base) left it, with the
 * heads of the scopes that have a leaf since then applied. It is built in two steps so that the
 * heavy part holds no lock (commitScopeHeads): prepared from what is committed (prepareScopeHeads:
 * the changed buckets read back, rehashed and the map's tree updated), then, under the lock on the
 * log's head, brought up to the log's size by absorbing only the scopes with a leaf since.
 */
export class HeadMapDraft {
  private readonly absorbed = new Map<string, AbsorbedScope>();
  /** The changed buckets' texts (under `count`): the base's, with the absorbed heads applied. */
  private buckets = new Map<number, string>();
  /** Whether `buckets` holds the whole map (rebucketed under more buckets): a bucket not in it is empty. */
  private whole = false;
  /** Buckets changed since their hash was last computed. */
  private stale = new Set<number>();
  /** Each changed bucket's text and hash as last computed: what the commit writes. */
  private readonly sealed = new Map<number, { text: string; hash: Buffer }>();
  private count: number;
  private scopes: number;

  private constructor(
    private readonly dialect: DialectName,
    private readonly log: string,
    private readonly source: ScopeHeadSource,
    /** The base's index (−1: the log has no heads leaf yet) and bucket count. */
    readonly baseIndex: number,
    private readonly baseCount: number,
    baseScopes: number,
    /** Every leaf below this index is absorbed. */
    private absorbedTo: number,
    private tree: HeadMapTree | undefined,
  ) {
    this.count = baseCount;
    this.scopes = baseScopes;
  }

  /**
   * A draft on the latest heads leaf below `size` (read from `last`), nothing absorbed yet;
   * undefined when no leaf follows it. Takes the cached tree when it is the base's (and empties
   * the cache: the draft changes the tree).
   */
  static async open(
    db: HeadDb,
    dialect: DialectName,
    log: string,
    source: ScopeHeadSource,
    last: AuditHeadMapRow | undefined,
    size: number,
    cache: { current?: HeadMapCache },
  ): Promise<HeadMapDraft | undefined> {
    const baseIndex = last === undefined ? -1 : Number(last.leaf_idx);
    if (baseIndex + 1 >= size) return undefined;
    const count = (last === undefined ? undefined : parseHeadsLeaf(last.body, log)?.buckets) ?? HEAD_MAP_BUCKETS;
    const mine = cache.current?.leafIndex === baseIndex ? cache.current : undefined;
    cache.current = undefined;
    const scopes = mine?.scopes ?? (last === undefined ? 0 : last.scopes !== null ? Number(last.scopes) : await countScopesAt(db, baseIndex));
    // The tree as this instance left it at the base, else as the stored bucket hashes give it (another instance's, a start).
    const tree = mine?.tree ?? new HeadMapTree(count, await bucketHashesAt(db, count, baseIndex));
    return new HeadMapDraft(dialect, log, source, baseIndex, count, scopes, baseIndex + 1, tree);
  }

  /** Applies the heads of the scopes with a leaf from the last absorbed one to `size`, and rehashes what they changed. */
  async absorbTo(db: HeadDb, size: number): Promise<void> {
    if (size > this.absorbedTo) {
      const { rows } = await sql<{ scope_id: string }>`
        select distinct scope_id from audit_log_leaves where idx >= ${this.absorbedTo} and idx < ${size} and scope_id is not null`.execute(db);
      this.absorbedTo = size;
      const heads = await readScopeHeads(
        db,
        this.dialect,
        this.source,
        rows.map((row) => row.scope_id),
      );
      const keys = new Map(rows.map((row) => [row.scope_id, this.absorbed.get(row.scope_id)?.key ?? headKeyOf(row.scope_id)]));
      if (!this.whole) {
        const unread = [...new Set([...keys.values()].map((key) => headBucketOfKey(key, this.count)))].filter((bucket) => !this.buckets.has(bucket));
        // A bucket the base's tree has empty is not read back (most of a young map's are): for every bucket this draft has not
        // changed yet, the tree is still the base's.
        const stored: number[] = [];
        for (const bucket of unread) {
          if (this.tree!.isEmpty(bucket)) this.buckets.set(bucket, '');
          else stored.push(bucket);
        }
        for (const [bucket, text] of await currentBucketTexts(db, this.dialect, stored, this.count, this.baseIndex)) this.buckets.set(bucket, text);
      }
      for (const [scopeId, key] of keys) this.apply(scopeId, key, heads.get(scopeId));
      const count = headBucketCount(this.baseCount, this.scopes);
      if (count !== this.count) await this.rebucket(db, count);
    }
    this.seal();
  }

  /** Sets a scope's entry to its head now (none when it has no row or its head is −1). */
  private apply(scopeId: string, key: number, head: ScopeHead | undefined): void {
    const present = head !== undefined && head.seq >= 0 ? head : undefined;
    const now = present === undefined ? undefined : headEntryText(scopeId, present);
    const bucket = headBucketOfKey(key, this.count);
    const { text, before } = withEntry(this.buckets.get(bucket) ?? '', scopeId, now);
    const known = this.absorbed.get(scopeId);
    this.absorbed.set(scopeId, { key, was: known === undefined ? headOfEntry(before) : known.was, head: present });
    if (before === now) return;
    this.buckets.set(bucket, text);
    this.scopes += (now === undefined ? 0 : 1) - (before === undefined ? 0 : 1);
    this.stale.add(bucket);
  }

  /** The map outgrew its buckets (headBucketCount): every entry of the base, bucketed anew under `count`, with the absorbed heads. */
  private async rebucket(db: HeadDb, count: number): Promise<void> {
    const heads = new Map<number, Map<string, ScopeHead>>();
    const headsOf = (bucket: number): Map<string, ScopeHead> => {
      let entries = heads.get(bucket);
      if (entries === undefined) heads.set(bucket, (entries = new Map()));
      return entries;
    };
    for (const entry of await entriesAt(db, sql`e.head_seq >= 0`, this.baseIndex)) headsOf(headBucketOfKey(entry.key, count)).set(entry.scopeId, entry.head);
    for (const [scopeId, { key, head }] of this.absorbed) {
      const entries = headsOf(headBucketOfKey(key, count));
      if (head === undefined) entries.delete(scopeId);
      else entries.set(scopeId, head);
    }
    this.count = count;
    this.buckets = new Map([...heads].map(([bucket, entries]) => [bucket, headBucketText(entryTexts(entries))]));
    this.whole = true;
    this.tree = undefined;
    this.sealed.clear();
    this.stale = new Set(this.buckets.keys());
  }

  /** Rehashes the buckets changed since the last call, and their paths in the map's tree. */
  private seal(): void {
    const hashes = new Map<number, Buffer>();
    for (const bucket of this.stale) {
      const text = this.buckets.get(bucket)!;
      const hash = headBucketTextHash(text);
      this.sealed.set(bucket, { text, hash });
      hashes.set(bucket, hash);
    }
    this.stale.clear();
    if (this.tree === undefined) this.tree = new HeadMapTree(this.count, hashes);
    else this.tree.setAll(hashes);
  }

  /**
   * Appends the heads leaf at `size` (every leaf below it absorbed) and writes the map's new
   * versions there, in the caller's transaction; answers the map as that leaf left it.
   */
  async commit<Schema extends HeadSchema>(
    trx: Kysely<Schema>,
    size: number,
    append: (trx: Kysely<Schema>, data: Buffer, itemId: string) => Promise<number>,
  ): Promise<HeadMapCache> {
    const { dialect } = this;
    const body = headsLeafText(this.log, size, this.tree!.root, this.count);
    const index = await append(trx, Buffer.from(body, 'utf8'), newId());
    if (index !== size) throw new Error(`the heads leaf was appended at ${index}, not ${size}: another writer held the log`);
    // The heads leaf at `size` was appended just now, so no version at `size` exists yet.
    const db = tablesOf<HeadSchema, Schema>(trx);
    const tables = tablesOf<AuditHeadTables, Schema>(trx);
    const changed: AuditHeadEntryRow[] = [];
    for (const [scopeId, { key, was, head }] of this.absorbed)
      if (!sameHead(head, was)) changed.push({ scope_id: scopeId, tree_size: size, head_key: key, head_seq: head?.seq ?? -1, head_hash: head?.hash ?? null });
    await entryInserter.insert(tables, dialect, changed);
    const sealed = [...this.sealed].map(([bucket, { text, hash }]) => ({ bucket: this.count + bucket, text, hash }));
    await bucketInserter.insert(
      tables,
      dialect,
      sealed.map(({ bucket, hash }) => ({ bucket, tree_size: size, hash: hash.toString('hex') })),
    );
    // Rebucketed: the rows of the fewer buckets go (heap numbers below `count`); every bucket's row is written (replaced) below.
    if (this.whole) await db.deleteFrom('audit_head_bucket_texts').where('bucket', '<', this.count).execute();
    await bucketTextInserter.insert(
      tables,
      dialect,
      sealed.map(({ bucket, text }) => ({ bucket, tree_size: size, entries: text })),
    );
    await db
      .insertInto('audit_head_maps')
      .values({ leaf_idx: size, body, scopes: this.scopes })
      .onConflict((oc) => oc.column('leaf_idx').doUpdateSet({ body, scopes: this.scopes }))
      .execute();
    return { leafIndex: size, tree: this.tree!, scopes: this.scopes };
  }
}

/** The log's size, unlocked. */
async function logSize(db: HeadDb): Promise<number> {
  return Number((await db.selectFrom('audit_log_head').select('size').where('id', '=', 1).executeTakeFirstOrThrow()).size);
}

/** Leaves appended since the last heads leaf (all of them before the first): what a checkpoint's map has to absorb. */
export async function leavesSinceHeadsLeaf<Schema extends HeadSchema>(db: Kysely<Schema>): Promise<number> {
  const view = tablesOf<HeadSchema, Schema>(db);
  const size = await logSize(view);
  const last = await latestHeadsLeaf(view, size);
  return size - (last === undefined ? 0 : Number(last.leaf_idx) + 1);
}

/**
 * The heavy step of a checkpoint, without the log's lock (statement by statement, on both
 * databases: a head that moves meanwhile comes with a leaf past the size read first, which the
 * commit absorbs): the heads of the scopes with a leaf since the last heads leaf, their buckets read
 * back and rehashed. Undefined: nothing to draft.
 */
export async function prepareScopeHeads<Schema extends HeadSchema>(
  database: { db: Kysely<Schema>; dialect: DialectName },
  log: string,
  source: ScopeHeadSource,
  cache: { current?: HeadMapCache } = {},
): Promise<HeadMapDraft | undefined> {
  const view = tablesOf<HeadSchema, Schema>(database.db);
  const size = await logSize(view);
  const draft = await HeadMapDraft.open(view, database.dialect, log, source, await latestHeadsLeaf(view, size), size, cache);
  await draft?.absorbTo(view, size);
  return draft;
}

/**
 * Before a checkpoint: under the lock on the log's head (held to the commit, so no leaf is
 * appended meanwhile), the heads of the scopes with a leaf since the last heads leaf are written
 * into the map, and a heads leaf committing the map's root is appended as the log's last leaf.
 * Answers the tree size to sign: the log's size, ending with a heads leaf (left as it is when its
 * last leaf is one already). `append` appends the leaf in the transaction.
 *
 * `draft` (prepareScopeHeads) carries what was done without the lock: only the scopes with a leaf
 * since it are read here. A draft on another base (another instance appended a heads leaf since) is
 * dropped, and the whole step done here.
 */
export async function commitScopeHeads<Schema extends HeadSchema>(
  database: { db: Kysely<Schema>; dialect: DialectName },
  log: string,
  source: ScopeHeadSource,
  append: (trx: Kysely<Schema>, data: Buffer, itemId: string) => Promise<number>,
  options: {
    cache?: { current?: HeadMapCache };
    draft?: HeadMapDraft | undefined;
  } = {},
): Promise<number> {
  const cache = options.cache ?? {};
  const committed = await database.db.transaction().execute(async (trx): Promise<number | HeadMapCache> => {
    const db = tablesOf<HeadSchema, Schema>(trx);
    const size = Number((await forUpdate(db.selectFrom('audit_log_head').select('size').where('id', '=', 1), database.dialect).executeTakeFirstOrThrow()).size);
    const last = await latestHeadsLeaf(db, size);
    const baseIndex = last === undefined ? -1 : Number(last.leaf_idx);
    if (baseIndex + 1 >= size) return size;
    const draft = options.draft?.baseIndex === baseIndex ? options.draft : await HeadMapDraft.open(db, database.dialect, log, source, last, size, cache);
    await draft!.absorbTo(db, size);
    return draft!.commit(trx, size, append);
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
