import { newestFirst, pageOf, readSnapshot, type TimeColumns, type TimePosition } from '@vigil/platform';
import { sql, type Kysely, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { GateDatabase, GateSchema } from '../schema.ts';
import type { AuditRow } from '../requests/index.ts';
import type { RequestStatus } from '../stored-formats/index.ts';
import { entriesFromLeaf, TERM_COLUMNS, TERM_KINDS, type TermFilter } from './terms.ts';

export interface AuditListFilter {
  action?: string;
  event?: string;
  actor?: string;
  keyId?: string;
  requestId?: string;
  /** The current status of the entry's request (AgentGate's filter): read through the requests' status index. */
  status?: RequestStatus;
  /** Inclusive bounds on the entry time, epoch ms. */
  from?: number;
  to?: number;
  /** The page starts after this entry (newest first: older than it). */
  after?: TimePosition;
}

/** An entry's columns, in the order both halves of a filtered list give them. */
const ENTRY_COLUMNS = ['id', 'request_id', 'action', 'ts', 'event', 'actor', 'actor_key_id', 'actor_key_name', 'details', 'seq', 'prev_hash', 'hash'] as const;

/** The filters, but the position: what every part of a list (its page and its counts) applies. */
type EntryFilter = Omit<AuditListFilter, 'after'>;

/** Entry rows read by a list, from whichever tables (their columns named by raw references). */
type EntryRows = SelectQueryBuilder<GateSchema, 'audit_entries', AuditRow>;

/**
 * Entry rows the filters match, read in one order: `ts` and `id` name the columns (of the table the
 * rows are read by) that order them and bound a page, so that an index on them serves both.
 */
interface ListPart extends TimeColumns {
  rows: EntryRows;
  /** The same rows for counting, from fewer tables where the filters allow (the terms alone when no filter reads the entry). */
  counted: EntryRows;
}

/** Every filter but `except` as conditions on the entry columns of `table` (times: `times.ts`). */
function entryConditions(filter: EntryFilter, table: string, except?: TermFilter, times = table): RawBuilder<boolean>[] {
  const column = (name: string) => sql.ref(`${table}.${name}`);
  const conditions: RawBuilder<boolean>[] = [];
  for (const name of Object.keys(TERM_COLUMNS) as TermFilter[]) {
    const value = filter[name];
    if (value !== undefined && name !== except) conditions.push(sql<boolean>`${column(TERM_COLUMNS[name])} = ${value}`);
  }
  if (filter.requestId !== undefined) conditions.push(sql<boolean>`${column('request_id')} = ${filter.requestId}`);
  if (filter.status !== undefined) conditions.push(sql<boolean>`${column('request_id')} in (select id from requests where status = ${filter.status})`);
  if (filter.from !== undefined) conditions.push(sql<boolean>`${sql.ref(`${times}.ts`)} >= ${filter.from}`);
  if (filter.to !== undefined) conditions.push(sql<boolean>`${sql.ref(`${times}.ts`)} <= ${filter.to}`);
  return conditions;
}

function whereAll(query: EntryRows, conditions: readonly RawBuilder<boolean>[]): EntryRows {
  return conditions.reduce((q, condition) => q.where(condition), query);
}

/**
 * The term filter a list reads its indexed part by: the one given that is likely the narrowest;
 * none when none is given or `requestId` is (its trail index reads a handful of entries).
 */
function drivingTerm(filter: EntryFilter): TermFilter | undefined {
  if (filter.requestId !== undefined) return undefined;
  return (['keyId', 'actor', 'action', 'event'] as const).find((name) => filter[name] !== undefined);
}

/** The entries the filters match, from audit_entries alone (no term filter, or `requestId`): by its time index or a request's trail index. */
function entriesPart(db: Kysely<GateSchema>, filter: EntryFilter): ListPart {
  const rows = whereAll(db.selectFrom('audit_entries').selectAll(), entryConditions(filter, 'audit_entries'));
  return { rows, ts: 'audit_entries.ts', id: 'audit_entries.id', counted: rows };
}

/**
 * A filtered list's two parts (docs/audit.md, "The audit list's filters"): the entries the terms
 * index so far, read by the driving term's range in (ts, id) order, and the entries whose leaves
 * follow `indexedTo` (the few committed since the terms job last ran), read through the log's
 * leaves (entriesFromLeaf). Every other filter applies to the entry rows of both.
 */
function termParts(db: Kysely<GateSchema>, filter: EntryFilter, term: TermFilter, indexedTo: number): [ListPart, ListPart] {
  const termRange = db.selectFrom('audit_entry_terms as t').where('t.kind', '=', TERM_KINDS[term]).where('t.value', '=', filter[term]!);
  const indexed = termRange
    .innerJoin('audit_entries as e', 'e.id', 't.entry_id')
    // The term's own (ts, id): the order and the page bounds read the term's key.
    .select(ENTRY_COLUMNS.map((name) => (name === 'id' ? sql.ref('t.entry_id').as('id') : sql.ref(`${name === 'ts' ? 't' : 'e'}.${name}`).as(name))))
    .$castTo<AuditRow>() as unknown as EntryRows;
  const tail = entriesFromLeaf(db, indexedTo)
    .select(ENTRY_COLUMNS.map((name) => sql.ref(`e.${name}`).as(name)))
    .$castTo<AuditRow>() as unknown as EntryRows;
  // Bounds on the time read the term's own ts; the other filters read the entry.
  const times = entryConditions({ from: filter.from, to: filter.to }, 't');
  const others = entryConditions({ ...filter, from: undefined, to: undefined }, 'e', term);
  const indexedRows = whereAll(indexed, [...times, ...others]);
  const tailRows = whereAll(tail, entryConditions(filter, 'e'));
  const termsAlone = whereAll(termRange.select(['t.ts', 't.entry_id']) as unknown as EntryRows, times);
  return [
    { rows: indexedRows, ts: 't.ts', id: 't.entry_id', counted: others.length === 0 ? termsAlone : indexedRows },
    { rows: tailRows, ts: 'e.ts', id: 'e.id', counted: tailRows },
  ];
}

/** The parts a list reads for `filter`: one, or a term filter's two. */
async function listParts(db: Kysely<GateSchema>, filter: EntryFilter): Promise<ListPart[]> {
  const term = drivingTerm(filter);
  return term === undefined ? [entriesPart(db, filter)] : termParts(db, filter, term, await termsIndexedTo(db));
}

/** How far the terms cover the log (indexAuditTerms). */
async function termsIndexedTo(db: Kysely<GateSchema>): Promise<number> {
  return Number((await db.selectFrom('audit_terms_progress').select('indexed_to').where('id', '=', 1).executeTakeFirstOrThrow()).indexed_to);
}

/** The query of one page of the parts: `limit` rows after `after`, skipping `skip`; two parts each read newest first, cut at `skip + limit` rows, and merged by (ts, id). */
function pageQuery(db: Kysely<GateSchema>, parts: readonly ListPart[], after: TimePosition | undefined, limit: number, skip: number): EntryRows {
  if (parts.length === 1) {
    const query = newestFirst(parts[0]!.rows, after, limit, parts[0]);
    return skip > 0 ? query.offset(skip) : query;
  }
  const [indexed, tail] = parts.map((part) => db.selectFrom(newestFirst(part.rows, after, skip + limit, part).as('m')).selectAll() as unknown as EntryRows);
  const merged = indexed!
    .unionAll(tail!)
    .orderBy(sql`ts desc, id desc`)
    .limit(limit);
  return skip > 0 ? merged.offset(skip) : merged;
}

/** The list's query for one page (what the index test explains). */
export async function auditListQuery(db: Kysely<GateSchema>, filter: AuditListFilter, limit: number, skip = 0): Promise<EntryRows> {
  const { after, ...filters } = filter;
  return pageQuery(db, await listParts(db, filters), after, limit, skip);
}

/**
 * One page's rows. When no entry of the unindexed part follows the page's start (the job has caught
 * up with the entries the filters match), the indexed part is read alone, as one index range.
 */
async function readPage(db: Kysely<GateSchema>, parts: readonly ListPart[], after: TimePosition | undefined, limit: number, skip: number): Promise<AuditRow[]> {
  const caughtUp = parts.length === 2 && (await newestFirst(parts[1]!.rows, after, 1, parts[1]).execute()).length === 0;
  return pageQuery(db, caughtUp ? parts.slice(0, 1) : parts, after, limit, skip).execute();
}

/** How many entries the parts hold; with `through`, only those at or before it in list order (newest first: the entries before the page after it). */
async function countParts(parts: readonly ListPart[], through?: TimePosition): Promise<number> {
  let total = 0;
  for (const part of parts) {
    const rows =
      through === undefined ? part.counted : part.counted.where(sql<boolean>`(${sql.ref(part.ts)}, ${sql.ref(part.id)}) >= (${through.ts}, ${through.id})`);
    const row = await rows
      .clearSelect()
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .executeTakeFirstOrThrow();
    total += Number(row.count);
  }
  return total;
}

export interface AuditPageRows {
  rows: AuditRow[];
  nextCursor: string | null;
  hasMore: boolean;
  /** Entries the filters match, and how many of them come before this page. */
  total: number;
  offset: number;
}

/**
 * One page, the cursor of the next, and where it stands among every matching entry. The page
 * starts after `filter.after` (the cursor) or after `offset` entries (AgentGate's paging), not both.
 */
export async function listAudit(database: GateDatabase, filter: AuditListFilter, page: { limit: number; offset: number }): Promise<AuditPageRows> {
  const { after, ...filters } = filter;
  // The page and its counts from one snapshot, so that they agree while entries are written.
  return readSnapshot(database, async (db) => {
    const parts = await listParts(db, filters);
    const found = pageOf(await readPage(db, parts, after, page.limit + 1, page.offset), page.limit);
    const total = await countParts(parts);
    const offset = after === undefined ? page.offset : await countParts(parts, after);
    return { ...found, total, offset };
  });
}

/** Every actor that appears in the audit, sorted: the actor terms' distinct values, and the actors of the entries not yet indexed. */
export async function auditActors(database: GateDatabase): Promise<string[]> {
  return readSnapshot(database, async (db) => {
    const rows = await db
      .selectFrom('audit_entry_terms')
      .select('value as actor')
      .distinct()
      .where('kind', '=', TERM_KINDS.actor)
      .union(entriesFromLeaf(db, await termsIndexedTo(db)).select('e.actor'))
      .orderBy('actor')
      .execute();
    return rows.map((r) => r.actor);
  });
}
