// Money in SQL, the same arithmetic as @vigil/pricing's: whole nano-dollars, ties rounded up, on
// both databases (PostgreSQL's round() of a double rounds ties to even, SQLite's away from zero).
import { NANOS_PER_USD } from '@vigil/pricing';
import { sql, type RawBuilder } from 'kysely';

/** Whole nano-dollars of a USD amount (nanosOf). */
export const nanosSql = (usd: RawBuilder<unknown>): RawBuilder<number> => sql<number>`floor(${usd} * ${sql.lit(NANOS_PER_USD)} + 0.5)`;

/** The exact sum of a USD column in whole nano-dollars, 0 over no row (usdOf gives the amount). */
export const sumNanosSql = (column: string): RawBuilder<number> => sql<number>`coalesce(sum(${nanosSql(sql.ref(column))}), 0)`;

/** The exact sum of two USD amounts, as USD (addUsd): how a stored total takes a cost. */
export const addUsdSql = (a: RawBuilder<unknown>, b: RawBuilder<unknown>): RawBuilder<number> =>
  sql<number>`(${nanosSql(a)} + ${nanosSql(b)}) / ${sql.lit(NANOS_PER_USD)}`;
