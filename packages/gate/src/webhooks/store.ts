import type { DeliveryRow, GateDatabase, WebhookRow } from '../schema.ts';
import type { WebhookEvent } from './outbox.ts';

/** Oldest first. */
export async function listWebhooks(database: GateDatabase): Promise<WebhookRow[]> {
  return database.db.selectFrom('webhooks').selectAll().orderBy('created_at').orderBy('id').execute();
}

export async function findWebhook(database: GateDatabase, id: string): Promise<WebhookRow | undefined> {
  return database.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertWebhook(database: GateDatabase, row: WebhookRow): Promise<void> {
  await database.db.insertInto('webhooks').values(row).execute();
}

export interface WebhookChanges {
  events?: WebhookEvent[];
  enabled?: boolean;
  url?: string;
  /** null removes the secret. */
  secret?: string | null;
}

/** The webhook as it is after the changes; undefined when there is no such webhook. */
export async function changeWebhook(database: GateDatabase, id: string, changes: WebhookChanges, now: number): Promise<WebhookRow | undefined> {
  const columns = {
    ...(changes.events !== undefined && { events: JSON.stringify(changes.events) }),
    ...(changes.enabled !== undefined && { enabled: changes.enabled ? 1 : 0 }),
    ...(changes.url !== undefined && { url: changes.url }),
    ...(changes.secret !== undefined && { secret: changes.secret }),
    updated_at: now,
  };
  await database.db.updateTable('webhooks').set(columns).where('id', '=', id).execute();
  return findWebhook(database, id);
}

/** Deletes the webhook and fails its pending deliveries, together; false when there is no such webhook. */
export async function deleteWebhook(database: GateDatabase, id: string): Promise<boolean> {
  return database.db.transaction().execute(async (trx) => {
    const result = await trx.deleteFrom('webhooks').where('id', '=', id).executeTakeFirst();
    await trx.updateTable('deliveries').set({ status: 'failed', last_error: 'the webhook was deleted' }).where('webhook_id', '=', id).where('status', '=', 'pending').execute();
    return Number(result.numDeletedRows) === 1;
  });
}

/** A page of the webhook's deliveries, newest first; `total` counts them all. */
export async function listDeliveries(database: GateDatabase, webhookId: string, page: { limit: number; offset: number }): Promise<{ rows: DeliveryRow[]; total: number }> {
  const base = database.db.selectFrom('deliveries').where('webhook_id', '=', webhookId);
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}
