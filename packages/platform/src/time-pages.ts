import { sql, type SelectQueryBuilder } from 'kysely';
import { z } from 'zod';

// Lists read newest first by (ts, id) and paged by cursor: the gate's audit list and each service's
// change log. The table needs `ts` and `id` columns and an index ending in (ts, id) per filter, so
// a page reads one index range in order and stops after `limit` rows.

/** A position in a newest-first list: the (time, id) of an entry; the next page starts after it. */
export interface TimePosition {
  ts: number;
  id: string;
}

/** A list cursor: the (time, id) of the last entry of a page, base64url-encoded, opaque to clients. */
export function encodeTimeCursor(position: TimePosition): string {
  return Buffer.from(JSON.stringify([position.ts, position.id])).toString('base64url');
}

/** The `cursor` query parameter of a list paged by `encodeTimeCursor`; a foreign cursor is a 400. */
export const timeCursorSchema = z
  .string()
  .max(200)
  .transform((text, ctx): TimePosition => {
    try {
      const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
      if (Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === 'string' && value[1].length <= 100) {
        return { ts: value[0] as number, id: value[1] };
      }
    } catch {
      // Not JSON: reported below like any other foreign cursor.
    }
    ctx.addIssue({ code: 'custom', message: 'cursor is not one this endpoint issued; pass nextCursor unchanged' });
    return z.NEVER;
  })
  .meta({ type: 'string' });

/** The columns a newest-first list orders and bounds its pages by (qualified when the query joins tables that both have them). */
export interface TimeColumns {
  ts: string;
  id: string;
}

/** The filtered query, newest first, starting after `after`, at most `limit` rows. */
export function newestFirst<DB, TB extends keyof DB, Row extends TimePosition>(
  query: SelectQueryBuilder<DB, TB, Row>,
  after: TimePosition | undefined,
  limit: number,
  columns: TimeColumns = { ts: 'ts', id: 'id' },
): SelectQueryBuilder<DB, TB, Row> {
  const [ts, id] = [sql.ref(columns.ts), sql.ref(columns.id)];
  const rest = after === undefined ? query : query.where(sql<boolean>`(${ts}, ${id}) < (${after.ts}, ${after.id})`);
  return rest.orderBy(sql`${ts} desc, ${id} desc`).limit(limit);
}

/** One page of the filtered query and the cursor of the next (one row more is read to know whether it exists). */
export async function readNewestFirstPage<DB, TB extends keyof DB, Row extends TimePosition>(
  query: SelectQueryBuilder<DB, TB, Row>,
  after: TimePosition | undefined,
  limit: number,
): Promise<{ rows: Row[]; nextCursor: string | null; hasMore: boolean }> {
  return pageOf((await newestFirst(query, after, limit + 1).execute()) as Row[], limit);
}

/** A page of at most `limit` rows from the rows read for it (one more, if there is one), and the cursor of the next. */
export function pageOf<Row extends TimePosition>(rows: Row[], limit: number): { rows: Row[]; nextCursor: string | null; hasMore: boolean } {
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  const last = page.at(-1);
  return { rows: page, nextCursor: hasMore && last ? encodeTimeCursor(last) : null, hasMore };
}
