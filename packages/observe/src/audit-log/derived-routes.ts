// The derived data as stored, raw and paged, for `vigil verify --deep` to compare with what it
// recomputes from the chained events (docs/audit.md#--deep). Each page is one range of a primary
// key after the cursor, so reading everything is one pass over each table in index order.
import { routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { type AuditedTable, isAudited, readDerivedPage } from '../events/index.ts';

const DEFAULT_PAGE = 1000;
const MAX_PAGE = 5000;

function cursorSchema(key: AuditedTable['audit']['key']) {
  return z
    .string()
    .max(4000)
    .transform((text, ctx): unknown[] => {
      try {
        const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
        if (
          Array.isArray(value) &&
          value.length === key.length &&
          value.every((v, i) => (key[i]!.kind === 'number' ? Number.isSafeInteger(v) : typeof v === 'string' && v.length <= 1000))
        ) {
          return value;
        }
      } catch {
        // Not JSON: reported below like any other foreign cursor.
      }
      ctx.addIssue({ code: 'custom', message: 'cursor is not one this endpoint issued; pass nextCursor unchanged' });
      return z.NEVER;
    })
    .meta({ type: 'string' });
}

const pageQuery = (key: AuditedTable['audit']['key']) =>
  z.object({
    cursor: cursorSchema(key).optional().describe('nextCursor of the previous page; absent for the first'),
    limit: z.coerce.number().int().min(1).max(MAX_PAGE).default(DEFAULT_PAGE),
  });

const PAGING =
  'Raw, as stored (column names as in the database), for `vigil verify --deep` to compare with what it recomputes from the chained events (docs/audit.md#--deep). ' +
  'Pages by cursor in primary-key order: pass `nextCursor` as `cursor` until it is null.';

/** One listing per audited derived table the service registers, in registration order. */
export function registerDerivedDataRoutes(app: ZodApp, ctx: ObserveContext): void {
  for (const table of ctx.derivedTables.filter(isAudited)) {
    const { path, operationId, summary, key, row } = table.audit;
    app.get(
      `/api/audit/derived/${path}`,
      routeOptions('read', {
        operationId,
        summary,
        description: PAGING,
        tags: ['audit'],
        querystring: pageQuery(key),
        response: { 200: z.object({ rows: z.array(row), nextCursor: z.string().nullable() }) },
      }),
      async (request) => readDerivedPage(ctx.database.db, table, request.query.cursor, request.query.limit),
    );
  }
}
