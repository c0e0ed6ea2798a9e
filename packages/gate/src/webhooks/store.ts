import { forUpdate, newId, recordChange, toIso, updateAction, type ChangeActor } from '@vigil/platform';
import type { GateDatabase } from '../schema.ts';
import type { DeliveryRow, WebhookRow } from './tables.ts';
import type { WebhookEvent } from './outbox.ts';

export interface Webhook {
  id: string;
  url: string;
  events: WebhookEvent[];
  enabled: boolean;
  hasSecret: boolean;
  createdAt: string;
  updatedAt: string;
}

/** The secret is write-only: the public shape (responses, admin-change snapshots) says whether one is set. */
export function toWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as WebhookEvent[],
    enabled: row.enabled === 1,
    hasSecret: row.secret !== null,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

/** Oldest first. */
export async function listWebhooks(database: GateDatabase): Promise<WebhookRow[]> {
  return database.db.selectFrom('webhooks').selectAll().orderBy('created_at').orderBy('id').execute();
}

export async function findWebhook(database: GateDatabase, id: string): Promise<WebhookRow | undefined> {
  return database.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
}

export interface WebhookChanges {
  url?: string;
  events?: WebhookEvent[];
  enabled?: boolean;
  /** null removes the secret. */
  secret?: string | null;
}

export async function createWebhook(
  database: GateDatabase,
  input: { url: string; events: WebhookEvent[]; secret: string | null },
  actor: ChangeActor,
  now: number,
): Promise<WebhookRow> {
  const row: WebhookRow = {
    id: newId(),
    url: input.url,
    events: JSON.stringify(input.events),
    secret: input.secret,
    enabled: 1,
    created_at: now,
    updated_at: now,
  };
  await database.db.transaction().execute(async (trx) => {
    await trx.insertInto('webhooks').values(row).execute();
    await recordChange(trx, { resource: 'webhook', resourceId: row.id, action: 'created', actor, before: null, after: toWebhook(row) }, now);
  });
  return row;
}

/**
 * Applies the given fields; undefined when no such webhook exists. A new secret alone shows in the
 * snapshots as no difference (both say hasSecret), so it is recorded as `updated` all the same.
 */
export async function updateWebhook(
  database: GateDatabase,
  id: string,
  patch: WebhookChanges,
  actor: ChangeActor,
  now: number,
): Promise<WebhookRow | undefined> {
  return database.db.transaction().execute(async (trx) => {
    const before = await forUpdate(trx.selectFrom('webhooks').selectAll().where('id', '=', id), database.dialect).executeTakeFirst();
    if (!before) return undefined;
    const changes = {
      ...(patch.events !== undefined && { events: JSON.stringify(patch.events) }),
      ...(patch.enabled !== undefined && { enabled: patch.enabled ? 1 : 0 }),
      ...(patch.url !== undefined && { url: patch.url }),
      ...(patch.secret !== undefined && { secret: patch.secret }),
      updated_at: now,
    };
    await trx.updateTable('webhooks').set(changes).where('id', '=', id).execute();
    const after: WebhookRow = { ...before, ...changes };
    const action = after.secret !== before.secret ? 'updated' : updateAction(toWebhook(before), toWebhook(after));
    if (action !== null)
      await recordChange(trx, { resource: 'webhook', resourceId: id, action, actor, before: toWebhook(before), after: toWebhook(after) }, now);
    return after;
  });
}

/** Deletes the webhook and fails its pending deliveries; false when no such webhook exists. */
export async function deleteWebhook(database: GateDatabase, id: string, actor: ChangeActor, now: number): Promise<boolean> {
  return database.db.transaction().execute(async (trx) => {
    const before = await trx.deleteFrom('webhooks').where('id', '=', id).returningAll().executeTakeFirst();
    if (!before) return false;
    await trx
      .updateTable('deliveries')
      .set({ status: 'failed', last_error: 'the webhook was deleted' })
      .where('webhook_id', '=', id)
      .where('status', '=', 'pending')
      .execute();
    await recordChange(trx, { resource: 'webhook', resourceId: id, action: 'deleted', actor, before: toWebhook(before), after: null }, now);
    return true;
  });
}

/** A page of the webhook's deliveries, newest first; `total` counts them all. */
export async function listDeliveries(
  database: GateDatabase,
  webhookId: string,
  page: { limit: number; offset: number },
): Promise<{ rows: DeliveryRow[]; total: number }> {
  const base = database.db.selectFrom('deliveries').where('webhook_id', '=', webhookId);
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}
