import type { Kysely } from 'kysely';
import { changeLeafHash, changeStateHash, type AdminChangeRow, type ChangeLogTables, type Snapshot } from './change-log.ts';
import { tablesOf } from './db.ts';
import { hashHex } from './stored-hash.ts';
import { toIso } from './time.ts';

/**
 * Rows governed by the change log: a running service honours such a row (a policy, an API key, a
 * setting) only as its last logged change left it. The last logged change is the resource's change
 * row with the highest leaf index whose leaf matches it (a row written or edited outside the
 * service has no such leaf); the row's governed content must hash to the `state_hash` it recorded.
 * So a row inserted or edited in the database, or whose change rows were, is refused, however the
 * rest of the data looks. Which rows and which of their columns are governed is the feature's.
 */

/** Whether a governed row is as its last logged change left it; `reason` says why not. */
export type LoggedStateVerdict = { logged: true } | { logged: false; reason: string };

const LOGGED: LoggedStateVerdict = { logged: true };

function verdictOf(last: (AdminChangeRow & { leaf_hash: Buffer }) | undefined, state: Snapshot): LoggedStateVerdict {
  if (last === undefined) return { logged: false, reason: 'no logged change records it (written outside the service)' };
  const at = `${last.action} at ${toIso(Number(last.ts))}`;
  if (hashHex(last.leaf_hash) !== changeLeafHash(last).toString('hex')) {
    return { logged: false, reason: `its last change row (${last.id}, ${at}) does not match its audit-log leaf (the change log was edited)` };
  }
  if (last.state_hash === null) return { logged: false, reason: `its last logged change (${at}) left no such row` };
  if (last.state_hash !== changeStateHash(state))
    return { logged: false, reason: `it differs from its last logged change (${at}): edited outside the service` };
  return LOGGED;
}

/**
 * The verdicts on rows of one resource (by id; a null id is the resource's one row, e.g. the
 * settings): one query per 500 ids reading the resource's logged changes (by resource id, joined
 * to their leaves).
 */
export async function checkLoggedStates<Schema extends ChangeLogTables>(
  db: Kysely<Schema>,
  resource: string,
  rows: readonly { id: string | null; state: Snapshot }[],
): Promise<Map<string | null, LoggedStateVerdict>> {
  const view = tablesOf<ChangeLogTables, Schema>(db);
  const verdicts = new Map<string | null, LoggedStateVerdict>();
  const ids = rows.flatMap((row) => (row.id === null ? [] : [row.id]));
  const last = new Map<string | null, AdminChangeRow & { leaf_hash: Buffer }>();
  const keep = (changes: (AdminChangeRow & { idx: number; leaf_hash: Buffer })[]) => {
    // In leaf order: the last one seen of each resource id is its last logged change.
    for (const change of changes.sort((a, b) => Number(a.idx) - Number(b.idx))) last.set(change.resource_id, change);
  };
  const changes = view
    .selectFrom('admin_changes as c')
    .innerJoin('audit_log_leaves as l', 'l.item_id', 'c.id')
    .selectAll('c')
    .select(['l.idx', 'l.leaf_hash'])
    .where('c.resource', '=', resource);
  for (let i = 0; i < ids.length; i += 500) keep(await changes.where('c.resource_id', 'in', ids.slice(i, i + 500)).execute());
  if (rows.some((row) => row.id === null)) keep(await changes.where('c.resource_id', 'is', null).execute());
  for (const row of rows) verdicts.set(row.id, verdictOf(last.get(row.id), row.state));
  return verdicts;
}

/** Whether two states hold the same primitive values under the same names (false for nested values: they are hashed). */
function sameFlatState(a: Snapshot, b: Snapshot): boolean {
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const names = Object.keys(left);
  if (names.length !== Object.keys(right).length) return false;
  return names.every((name) => {
    const value = left[name];
    return (value === null || typeof value !== 'object') && Object.is(value, right[name]);
  });
}

/**
 * Verdicts remembered per row and content hash, so a row read again unchanged costs a comparison of
 * its values, not a hash or a query (the key lookup runs on every request). A verdict is read again after `maxAgeMs` (a change
 * through another instance sharing the database) and at once after `forget` (a change here).
 */
export class LoggedStates<Schema extends ChangeLogTables> {
  private readonly verdicts = new Map<string, { state: Snapshot; stateHash: string; verdict: LoggedStateVerdict; checkedAt: number }>();
  private generation = 0;

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly clock: { now(): number },
    private readonly maxAgeMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  async check(resource: string, id: string | null, state: Snapshot): Promise<LoggedStateVerdict> {
    const key = `${resource}\u0000${id ?? ''}`;
    const now = this.clock.now();
    const known = this.verdicts.get(key);
    const fresh = known !== undefined && now - known.checkedAt < this.maxAgeMs;
    // The same flat values as last time: no hash needed (the common case, on every request).
    if (fresh && sameFlatState(known.state, state)) return known.verdict;
    const stateHash = changeStateHash(state);
    if (fresh && known.stateHash === stateHash) return known.verdict;
    const generation = this.generation;
    const verdict = (await checkLoggedStates(this.db, resource, [{ id, state }])).get(id)!;
    if (generation === this.generation) {
      this.verdicts.delete(key);
      if (this.verdicts.size >= this.maxEntries) this.verdicts.delete(this.verdicts.keys().next().value!);
      this.verdicts.set(key, { state, stateHash, verdict, checkedAt: now });
    }
    return verdict;
  }

  /** After a change of governed rows committed through this instance. */
  forget(): void {
    this.generation += 1;
    this.verdicts.clear();
  }
}
