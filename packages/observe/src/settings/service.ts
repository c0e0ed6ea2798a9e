import type { ObserveContext } from '../context.ts';

/** Runtime settings: stored values win over the environment defaults. */
export interface Settings {
  retentionDays: number;
  approvalGateWebhookSecret: string | null;
  formServiceWebhookSecret: string | null;
}

export type SettingsPatch = Partial<Settings>;

type SettingKey = keyof Settings;

export async function readSettings(ctx: ObserveContext): Promise<Settings> {
  const stored = await ctx.database.db.selectFrom('settings').select(['key', 'value']).execute();
  const values = new Map(stored.map((row) => [row.key, JSON.parse(row.value) as unknown]));
  const pick = <T>(key: SettingKey, fallback: T): T => (values.has(key) ? (values.get(key) as T) : fallback);
  return {
    retentionDays: pick('retentionDays', ctx.config.retentionDays),
    approvalGateWebhookSecret: pick('approvalGateWebhookSecret', ctx.config.webhookSecrets.approvalGate ?? null),
    formServiceWebhookSecret: pick('formServiceWebhookSecret', ctx.config.webhookSecrets.formService ?? null),
  };
}

/** Stores the given settings; a secret set to null is removed, so the environment value applies again. */
export async function updateSettings(ctx: ObserveContext, patch: SettingsPatch): Promise<Settings> {
  const now = ctx.clock.now();
  await ctx.database.db.transaction().execute(async (trx) => {
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
  });
  return readSettings(ctx);
}
