import type { ChangeActor } from '@vigil/platform';
import type { Kysely } from 'kysely';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import type { ObserveSchema } from '../schema.ts';
import { activeHoldsOn, insertHold, releaseHold } from './store.ts';
import type { HoldOut } from './schemas.ts';
import type { LegalHoldRow } from './tables.ts';

/** Places a hold; a subject's id is stored as its keyed hash. */
export async function placeHold(
  ctx: ObserveContext,
  body: { scope: LegalHoldRow['scope']; targetId: string; reason: string },
  actor: ChangeActor,
): Promise<LegalHoldRow> {
  const targetId = body.scope === 'subject' ? ctx.subjects.hash(body.targetId) : body.targetId;
  return insertHold(ctx.database, { scope: body.scope, target_id: targetId, reason: body.reason }, actor, ctx.clock.now());
}

/** Releases a hold: 404 when there is none, 409 when it was released already. */
export async function releaseLegalHold(ctx: ObserveContext, id: string, reason: string, actor: ChangeActor): Promise<HoldOut> {
  const released = await releaseHold(ctx.database, id, reason, actor, ctx.clock.now());
  if (released === undefined) throw observeError('legalHoldNotFound');
  if (!released.before.active) throw observeError('legalHoldReleased', `Legal hold ${id} was released already (${released.before.releasedAt})`);
  return released.after;
}

/**
 * Throws 409 legal_hold naming the first hold in force on any of the targets (a subject by its
 * keyed hash): what erasure checks, in its transaction, before it changes anything.
 */
export async function refuseHeld(
  db: Kysely<ObserveSchema>,
  targets: { sessions?: readonly string[]; agents?: readonly string[]; subjects?: readonly string[] },
): Promise<void> {
  const holds = await activeHoldsOn(db, targets);
  if (holds.length === 0) return;
  const first = holds[0]!;
  const what = first.scope === 'subject' ? 'the data subject' : `${first.scope} ${JSON.stringify(first.targetId)}`;
  throw observeError(
    'legalHold',
    `Legal hold ${first.id} on ${what} (${JSON.stringify(first.reason)}) blocks this; release it first (POST /api/holds/${first.id}/release)`,
    holds.map((hold) => ({ path: `holds.${hold.id}`, message: `${hold.scope} hold: ${hold.reason}` })),
  );
}
