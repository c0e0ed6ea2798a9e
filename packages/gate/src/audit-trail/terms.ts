// The audit list's filter index, kept off the request path (docs/audit.md, "The audit list's
// filters"). Four B-trees on audit_entries (actor, event, action, key, each ending in ts and id)
// cost a request creation a third of the pages its commit wrote; here their entries are written in
// batches, in commit order, by a background job, and a list reads them for the entries indexed so
// far and reads the few entries committed since straight from the log's leaves.
import { BulkInserter, forUpdate, tablesOf, type DialectName, type MigrationDb } from '@vigil/platform';
import { sql, type Kysely } from 'kysely';
import type { AuditRow } from '../requests/index.ts';
import type { GateDatabase, GateSchema } from '../schema.ts';
import type { AuditEntryTermRow, AuditTrailTables } from './tables.ts';

/** The filters the terms serve, by the number stored in `kind`. */
export const TERM_KINDS = { actor: 1, event: 2, action: 3, keyId: 4 } as const;
export type TermFilter = keyof typeof TERM_KINDS;
const TERM_FILTERS = Object.keys(TERM_KINDS) as TermFilter[];

/** The entry column each filter matches. */
export const TERM_COLUMNS = { actor: 'actor', event: 'event', action: 'action', keyId: 'actor_key_id' } as const satisfies Record<TermFilter, keyof AuditRow>;

/** An entry's terms: one per filter column it has a value in (a policy's or expiry's entry has no key). */
function termsOf(entry: Pick<AuditRow, 'id' | 'ts' | (typeof TERM_COLUMNS)[TermFilter]>): AuditEntryTermRow[] {
  return TERM_FILTERS.flatMap((filter) => {
    const value = entry[TERM_COLUMNS[filter]];
    return value === null ? [] : [{ kind: TERM_KINDS[filter], value, ts: Number(entry.ts), entry_id: entry.id }];
  });
}

/**
 * The entries whose audit-log leaves are at `from` or after, each row the leaf (`l`) with its entry
 * (`e`); other leaves (changes, heads, erasures) match no entry. The leaves lead (SQLite's CROSS JOIN
 * keeps that order; a planner without statistics would otherwise walk the entries for them).
 */
export function entriesFromLeaf(db: Kysely<GateSchema>, from: number) {
  return db.selectFrom('audit_log_leaves as l').crossJoin('audit_entries as e').whereRef('e.id', '=', 'l.item_id').where('l.idx', '>=', from);
}

/** The terms' key order: (kind, value, ts, entry_id), as the table's primary key. */
function byKey(a: AuditEntryTermRow, b: AuditEntryTermRow): number {
  return (
    a.kind - b.kind || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0) || a.ts - b.ts || (a.entry_id < b.entry_id ? -1 : a.entry_id > b.entry_id ? 1 : 0)
  );
}

const termInserter = new BulkInserter<AuditTrailTables, 'audit_entry_terms'>('audit_entry_terms', {
  kind: 'integer',
  value: 'text',
  ts: 'bigint',
  entry_id: 'text',
});

/**
 * Migration step body (0028): the terms table, every existing entry's terms and the progress at the
 * log's size (every entry written so far has its leaf below it), then the four indexes go.
 */
export async function createAuditTerms(db: MigrationDb, dialect: DialectName): Promise<void> {
  await db.schema
    .createTable('audit_entry_terms')
    .addColumn('kind', 'integer', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('ts', 'bigint', (c) => c.notNull())
    .addColumn('entry_id', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('audit_entry_terms_pk', ['kind', 'value', 'ts', 'entry_id'])
    // The key is the whole row: on SQLite one B-tree, not a rowid table beside its key's index.
    .$call((builder) => (dialect === 'sqlite' ? builder.modifyEnd(sql`without rowid`) : builder))
    .execute();
  await db.schema
    .createTable('audit_terms_progress')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('indexed_to', 'bigint', (c) => c.notNull())
    .execute();
  for (const filter of TERM_FILTERS) {
    const column = sql.ref(TERM_COLUMNS[filter]);
    await sql`insert into audit_entry_terms (kind, value, ts, entry_id)
              select ${TERM_KINDS[filter]}, ${column}, ts, id from audit_entries where ${column} is not null`.execute(db);
  }
  await sql`insert into audit_terms_progress (id, indexed_to) select 1, size from audit_log_head where id = 1`.execute(db);
  await sql`insert into audit_terms_progress (id, indexed_to) select 1, 0 where not exists (select 1 from audit_terms_progress)`.execute(db);
  for (const index of ['audit_actor_ts', 'audit_event_ts', 'audit_action_ts', 'audit_key_ts']) await db.schema.dropIndex(index).execute();
}

/** Leaves a transaction of the job covers: its entries' terms are written while the write lock is held (SQLite), so the batch stays short. */
const LEAVES_PER_TRANSACTION = 2000;

/**
 * Writes the terms of the entries whose leaves follow `indexed_to`, in commit order, a batch per
 * transaction, until the log's size read first; resolves to the leaves covered. The leaves are
 * appended in commit order under the log head's lock, so every leaf below the size is committed
 * with its entry, and `indexed_to` never passes an entry that is not yet visible.
 */
export async function indexAuditTerms(database: GateDatabase): Promise<number> {
  const { db, dialect } = database;
  const size = Number((await db.selectFrom('audit_log_head').select('size').where('id', '=', 1).executeTakeFirst())?.size ?? 0);
  let covered = 0;
  for (;;) {
    const done = await db.transaction().execute(async (trx) => {
      const from = Number(
        (await forUpdate(trx.selectFrom('audit_terms_progress').select('indexed_to').where('id', '=', 1), dialect).executeTakeFirstOrThrow()).indexed_to,
      );
      const to = Math.min(size, from + LEAVES_PER_TRANSACTION);
      if (to <= from) return 0;
      const entries = await entriesFromLeaf(trx, from)
        .select(['e.id', 'e.ts', 'e.actor', 'e.event', 'e.action', 'e.actor_key_id'])
        .where('l.idx', '<', to)
        .execute();
      // In key order: consecutive rows land on the same pages of the key's B-tree.
      const terms = entries.flatMap(termsOf).sort(byKey);
      await termInserter.insert(tablesOf<AuditTrailTables, GateSchema>(trx), dialect, terms);
      await trx.updateTable('audit_terms_progress').set({ indexed_to: to }).where('id', '=', 1).execute();
      return to - from;
    });
    if (done === 0) return covered;
    covered += done;
  }
}

/** The job's interval: how far a list's unindexed tail can grow (about this long of writes). */
export const AUDIT_TERMS_INTERVAL_MS = 250;
