import { sql, type RawBuilder } from 'kysely';
import type { DialectName, MigrationDb } from './db.ts';

/**
 * SHA-256 values (chain hashes, audit-log leaves and nodes) are stored as their 32 bytes (SQLite
 * BLOB, PostgreSQL bytea), half the size of their hex text; every API, export and proof shows them
 * in hex as before. These convert between the two at the store's edge.
 */
export function hashColumnType(dialect: DialectName): 'blob' | 'bytea' {
  return dialect === 'sqlite' ? 'blob' : 'bytea';
}

/** The stored form of a hash given in hex. */
export function hashBytes(hex: string): Buffer {
  return Buffer.from(hex, 'hex');
}

/**
 * The hex form of a stored hash. A value of another type (SQLite columns take any: only a row
 * edited outside Vigil holds one) gives text that is no hash's hex, so it matches nothing.
 */
export function hashHex(stored: Buffer): string {
  return Buffer.isBuffer(stored) ? stored.toString('hex') : `(not a stored hash: ${typeof stored})`;
}

/**
 * The bytes of a stored hash, for the tree's arithmetic: a value of another type (as above) gives
 * its text's bytes, so the roots and proofs computed from it are wrong (and say so) rather than
 * failing.
 */
export function hashOf(stored: Buffer): Buffer {
  return Buffer.isBuffer(stored) ? stored : Buffer.from(String(stored), 'utf8');
}

/** hashHex in SQL, of the column or expression `column` (lower-case hex; null stays null). */
export function hashHexSql(dialect: DialectName, column: string): RawBuilder<string> {
  const value = sql.raw(column);
  // SQLite's hex(null) is '', not null.
  return dialect === 'sqlite' ? sql<string>`case when ${value} is null then null else lower(hex(${value})) end` : sql<string>`encode(${value}, 'hex')`;
}

/**
 * Migration step body: the hex SHA-256 values in `columns` of `table` stored as their 32 bytes. A
 * value that is not 64 lower-case hex digits (only an edit outside Vigil writes one) keeps its own
 * bytes instead, so it still matches no hash: a tampered row stays evident. SQLite keeps the
 * columns' declared type: text affinity stores a BLOB as given, and another type would mean
 * rebuilding the table (its rowids key the full-text index).
 */
export async function storeHashesAsBytes(db: MigrationDb, dialect: DialectName, table: string, columns: readonly string[]): Promise<void> {
  if (dialect === 'postgres') {
    const changes = columns.map(
      (column) =>
        `alter column ${column} type bytea using (case when ${column} ~ '^[0-9a-f]{64}$' then decode(${column}, 'hex') else convert_to(${column}, 'UTF8') end)`,
    );
    await sql.raw(`alter table ${table} ${changes.join(', ')}`).execute(db);
    return;
  }
  const changes = columns.map(
    (column) => `${column} = case when length(${column}) = 64 and ${column} not glob '*[^0-9a-f]*' then unhex(${column}) else cast(${column} as blob) end`,
  );
  await sql.raw(`update ${table} set ${changes.join(', ')}`).execute(db);
}
