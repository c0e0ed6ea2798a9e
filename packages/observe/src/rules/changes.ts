import { recordUpdate, withChanges, type ChangeActor, type DialectName } from '@vigil/platform';
import type { Transaction } from 'kysely';
import type { z } from 'zod';
import type { ObserveChangeResource, ObserveContext } from '../context.ts';
import { bodyValidationError } from '../errors.ts';
import type { ObserveSchema } from '../schema.ts';

/**
 * A stored rule's definition with a PUT's changes applied, checked whole (a change may be valid
 * alone and not with the rest, e.g. a new condition with the old threshold): a 400 otherwise.
 */
export function changedDefinition<Definition extends object>(
  stored: Definition,
  changes: { [K in keyof Definition]?: Definition[K] | undefined },
  schema: z.ZodType<Definition>,
): Definition {
  const checked = schema.safeParse(withChanges(stored, changes));
  if (!checked.success) throw bodyValidationError(checked.error.issues);
  return checked.data;
}

/** What the kit needs of a kind of rule to change one: its row lock, how a definition is stored, its public shape. */
export interface RuleTable<Rule, Definition> {
  resource: ObserveChangeResource;
  lock(trx: Transaction<ObserveSchema>, dialect: DialectName, id: string): Promise<Rule | undefined>;
  write(trx: Transaction<ObserveSchema>, id: string, definition: Definition, now: number): Promise<void>;
  toOut(rule: Rule): object;
}

/**
 * Changes a rule under its row lock with its admin-change row, in one transaction: `revise` turns
 * the stored rule into its new definition (or throws, changing nothing). The rule is read back, so
 * the snapshot shows the stored form (defaults filled in). False when no such rule exists.
 */
export async function changeRuleRecorded<Rule, Definition>(
  ctx: ObserveContext,
  table: RuleTable<Rule, Definition>,
  id: string,
  revise: (stored: Rule) => Definition,
  actor: ChangeActor,
): Promise<boolean> {
  const { database } = ctx;
  const now = ctx.clock.now();
  return database.db.transaction().execute(async (trx) => {
    const stored = await table.lock(trx, database.dialect, id);
    if (stored === undefined) return false;
    await table.write(trx, id, revise(stored), now);
    const after = (await table.lock(trx, database.dialect, id))!;
    await recordUpdate(trx, { resource: table.resource, resourceId: id, actor, before: stored, after, show: table.toOut }, now);
    return true;
  });
}
