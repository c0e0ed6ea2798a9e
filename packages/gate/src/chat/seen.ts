import { sha256Hex } from '@vigil/platform';
import type { GateDatabase } from '../schema.ts';
import { SIGNATURE_WINDOW_S } from './platforms.ts';
import type { ChatPlatformName } from './render.ts';

/**
 * Records a signed interaction as received, once: false when it was received before (a replay).
 * An interaction is what its signature covers (the platform, the signed timestamp and the raw
 * body), not the signature's spelling, so the same click with its hex signature re-cased is still
 * a replay. The row is kept until the timestamp leaves the signature window (the platforms' check
 * refuses it from then on); it is stored in the database, so a replay to another instance is
 * refused as well.
 */
export async function firstReceipt(
  database: GateDatabase,
  platform: ChatPlatformName,
  timestampSeconds: string,
  rawBody: string,
  nowMs: number,
): Promise<boolean> {
  const { db } = database;
  await db.deleteFrom('chat_seen_interactions').where('expires_at', '<', nowMs).execute();
  const result = await db
    .insertInto('chat_seen_interactions')
    .values({ digest: sha256Hex(`${platform}\n${timestampSeconds}\n${rawBody}`), expires_at: (Number(timestampSeconds) + SIGNATURE_WINDOW_S) * 1000 + 1000 })
    .onConflict((oc) => oc.column('digest').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
}
