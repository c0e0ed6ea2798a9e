import { canonicalJson, checkLoggedStates, recordChange, type ChangeActor, type Snapshot } from '@vigil/platform';
import type { Kysely } from 'kysely';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import type { ObserveSchema } from '../schema.ts';

/** Runtime settings: stored values win over the environment defaults. */
export interface Settings {
  retentionDays: number;
  approvalGateWebhookSecret: string | null;
  formServiceWebhookSecret: string | null;
}

export type SettingsPatch = Partial<Settings>;

type SettingKey = keyof Settings;

async function readSettingsWith(ctx: ObserveContext, db: Kysely<ObserveSchema>): Promise<Settings> {
  const stored = await db.selectFrom('settings').select(['key', 'value']).execute();
  const values = new Map(stored.map((row) => [row.key, JSON.parse(row.value) as unknown]));
  const pick = <T>(key: SettingKey, fallback: T): T => (values.has(key) ? (values.get(key) as T) : fallback);
  return {
    retentionDays: pick('retentionDays', ctx.config.retentionDays),
    approvalGateWebhookSecret: pick('approvalGateWebhookSecret', ctx.config.webhookSecrets.approvalGate ?? null),
    formServiceWebhookSecret: pick('formServiceWebhookSecret', ctx.config.webhookSecrets.formService ?? null),
  };
}

export function readSettings(ctx: ObserveContext): Promise<Settings> {
  return readSettingsWith(ctx, ctx.database.db);
}

/** Why a retention period is refused by the floor (RETENTION_FLOOR_DAYS), or null; 0 keeps everything, so it is never below. */
export function belowRetentionFloor(ctx: ObserveContext, retentionDays: number): string | null {
  const floor = ctx.config.retentionFloorDays;
  return retentionDays > 0 && retentionDays < floor
    ? `a retention period of ${retentionDays} days is below RETENTION_FLOOR_DAYS (${floor} days): logs must be kept at least that long`
    : null;
}

/**
 * The governed state of the settings: the stored retention setting as stored (its JSON text, null
 * when none is stored and the environment's applies). Every settings change records it, so a
 * retention setting inserted or edited in the database does not match the last logged change.
 */
async function retentionState(db: Kysely<ObserveSchema>): Promise<Snapshot & { retentionDays: string | null }> {
  const row = await db.selectFrom('settings').select('value').where('key', '=', 'retentionDays').executeTakeFirst();
  return { retentionDays: row?.value ?? null };
}

async function isLogged(db: Kysely<ObserveSchema>, state: Snapshot & { retentionDays: string | null }): Promise<boolean> {
  return state.retentionDays === null || (await checkLoggedStates(db, 'settings', [{ id: null, state }])).get(null)!.logged;
}

/** The retention period retention may apply, or why it must not run. */
export type RetentionPeriod = { retentionDays: number } | { refused: string };

/**
 * The retention period, from a stored setting only if it is as its last logged change left it
 * (platform logged-state.ts): the server never deletes sessions on a setting written around it.
 */
export async function loggedRetentionPeriod(ctx: ObserveContext): Promise<RetentionPeriod> {
  const [settings, state] = await Promise.all([readSettings(ctx), retentionState(ctx.database.db)]);
  const floor = belowRetentionFloor(ctx, settings.retentionDays);
  if (floor !== null) return { refused: floor };
  if (state.retentionDays === null) return { retentionDays: settings.retentionDays };
  // Cached: the job runs often, the setting rarely changes.
  const verdict = await ctx.loggedStates.check('settings', null, state);
  return verdict.logged ? { retentionDays: settings.retentionDays } : { refused: `the stored retention setting is refused: ${verdict.reason}` };
}

/** The settings as the change log shows them: whether each secret is set, never its value. */
function settingsSnapshot(settings: Settings) {
  return {
    retentionDays: settings.retentionDays,
    approvalGateSecretSet: settings.approvalGateWebhookSecret !== null,
    formServiceSecretSet: settings.formServiceWebhookSecret !== null,
  };
}

/**
 * Stores the given settings; a secret set to null is removed, so the environment value applies
 * again. A change is recorded (resource `settings`, no id; a new secret value shows in the snapshots
 * only as set, so a rotation reads as an update with equal sides); a patch that changes nothing is not,
 * unless it sets the retention period over a stored one that is not logged (written around this):
 * setting it through the API is what makes it apply again.
 */
export async function updateSettings(ctx: ObserveContext, patch: SettingsPatch, actor: ChangeActor): Promise<Settings> {
  const now = ctx.clock.now();
  const floor = patch.retentionDays === undefined ? null : belowRetentionFloor(ctx, patch.retentionDays);
  if (floor !== null) throw observeError('retentionBelowFloor', `retentionDays: ${floor}`, [{ path: 'retentionDays', message: floor }]);
  return ctx.database.db.transaction().execute(async (trx) => {
    const before = await readSettingsWith(ctx, trx);
    for (const [key, value] of Object.entries(patch) as [SettingKey, unknown][]) {
      if (value === undefined) continue;
      if (value === null) {
        await trx.deleteFrom('settings').where('key', '=', key).execute();
        continue;
      }
      await trx
        .insertInto('settings')
        .values({ key, value: JSON.stringify(value), updated_at: now })
        .onConflict((oc) => oc.column('key').doUpdateSet({ value: JSON.stringify(value), updated_at: now }))
        .execute();
    }
    const after = await readSettingsWith(ctx, trx);
    const state = await retentionState(trx);
    if (canonicalJson(before) !== canonicalJson(after) || (patch.retentionDays !== undefined && !(await isLogged(trx, state)))) {
      await recordChange(
        trx,
        {
          resource: 'settings',
          resourceId: null,
          action: 'updated',
          actor,
          before: settingsSnapshot(before),
          after: settingsSnapshot(after),
          state,
        },
        now,
      );
      ctx.loggedStates.forget();
    }
    return after;
  });
}
