import { newestFirst, readNewestFirstPage, readSnapshot, type TimePosition } from '@vigil/platform';
import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { GateDatabase, GateSchema } from '../schema.ts';
import type { AuditRow } from '../requests/index.ts';
import type { RequestStatus } from '../stored-formats/index.ts';

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

/**
 * Audit entries across requests, newest first (time, then id). Every filter has an index that
 * leads with its column and ends in (ts, id) (migration 0003), so a filtered page reads an index
 * range in order and stops after `limit` rows, whatever the size of the table; `requestId` reads
 * that request's trail index (request_id, seq) and sorts its few entries (migration 0008).
 */
function filteredAudit(db: Kysely<GateSchema>, filter: AuditListFilter): SelectQueryBuilder<GateSchema, 'audit_entries', AuditRow> {
  let query = db.selectFrom('audit_entries').selectAll();
  if (filter.action !== undefined) query = query.where('action', '=', filter.action);
  if (filter.event !== undefined) query = query.where('event', '=', filter.event);
  if (filter.actor !== undefined) query = query.where('actor', '=', filter.actor);
  if (filter.keyId !== undefined) query = query.where('actor_key_id', '=', filter.keyId);
  if (filter.requestId !== undefined) query = query.where('request_id', '=', filter.requestId);
  const { status } = filter;
  if (status !== undefined) query = query.where('request_id', 'in', (eb) => eb.selectFrom('requests').select('id').where('status', '=', status));
  if (filter.from !== undefined) query = query.where('ts', '>=', filter.from);
  if (filter.to !== undefined) query = query.where('ts', '<=', filter.to);
  return query;
}

/** The list's query for one page (what the index test explains). */
export function auditListQuery(db: Kysely<GateSchema>, filter: AuditListFilter, limit: number): SelectQueryBuilder<GateSchema, 'audit_entries', AuditRow> {
  return newestFirst(filteredAudit(db, filter), filter.after, limit);
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
    const matching = filteredAudit(db, filters);
    const count = async (query: typeof matching): Promise<number> => {
      const row = await query
        .clearSelect()
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .executeTakeFirstOrThrow();
      return Number(row.count);
    };
    const found = await readNewestFirstPage(page.offset > 0 ? matching.offset(page.offset) : matching, after, page.limit);
    const total = await count(matching);
    const offset = after === undefined ? page.offset : await count(matching.where(sql<boolean>`(ts, id) >= (${after.ts}, ${after.id})`));
    return { ...found, total, offset };
  });
}

/** Every actor that appears in the audit, sorted (read from the actor index alone). */
export async function auditActors(database: GateDatabase): Promise<string[]> {
  const rows = await database.db.selectFrom('audit_entries').select('actor').distinct().orderBy('actor').execute();
  return rows.map((r) => r.actor);
}
