import { newestFirst, readNewestFirstPage, type TimePosition } from '@vigil/platform';
import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { AuditRow, GateDatabase, GateSchema } from '../schema.ts';

export interface AuditListFilter {
  action?: string;
  event?: string;
  actor?: string;
  keyId?: string;
  requestId?: string;
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
  if (filter.from !== undefined) query = query.where('ts', '>=', filter.from);
  if (filter.to !== undefined) query = query.where('ts', '<=', filter.to);
  return query;
}

/** The list's query for one page (what the index test explains). */
export function auditListQuery(db: Kysely<GateSchema>, filter: AuditListFilter, limit: number): SelectQueryBuilder<GateSchema, 'audit_entries', AuditRow> {
  return newestFirst(filteredAudit(db, filter), filter.after, limit);
}

/** One page and the cursor of the next. */
export async function listAudit(
  database: GateDatabase,
  filter: AuditListFilter,
  limit: number,
): Promise<{ rows: AuditRow[]; nextCursor: string | null; hasMore: boolean }> {
  return readNewestFirstPage(filteredAudit(database.db, filter), filter.after, limit);
}

/** Every actor that appears in the audit, sorted (read from the actor index alone). */
export async function auditActors(database: GateDatabase): Promise<string[]> {
  const rows = await database.db.selectFrom('audit_entries').select('actor').distinct().orderBy('actor').execute();
  return rows.map((r) => r.actor);
}
