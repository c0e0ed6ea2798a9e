import { forgetCaseAnswers } from '../evals/index.ts';
import { compactFullTextIndex, dropFromFullTextIndex, forUpdate, hashHex, newId, signBytes, toIso, type ChangeActor } from '@vigil/platform';
import { OBSERVE_LOG, type ObserveAuditLog } from '../audit-log/index.ts';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { erasureLeafBody, erasureMarker, forgetMatchedLinks } from '../events/index.ts';
import { refuseHeld } from '../holds/index.ts';
import { forgetEmbeddings } from '../recall/index.ts';
import { forgetReflectState } from '../reflect/index.ts';
import { forgetReplays } from '../replay/index.ts';
import { forgetVerifiedSessions } from '../sessions/index.ts';

/** The kind of an erasure's leaf (the leaves' `kind` column). */
export const ERASURE_LEAF = 'erasure';

/** Events rewritten per statement. */
const CHUNK = 500;

/** The signed deletion receipt an erasure answers with (docs/guide/erasure.md#the-receipt). */
export interface ErasureReceipt {
  erasureId: string;
  /** The keyed hash of the subject's id. */
  subject: string;
  reason: string;
  requestedBy: string;
  erasedAt: string;
  eventCount: number;
  sessionIds: string[];
  /** The leaf's data (canonical JSON, listing every event by id and chain hash), its index in the log and the log key's Ed25519 signature over it. */
  leaf: { index: number; body: string; signature: string; keyId: string; publicKey: string };
}

/**
 * Erases a data subject: every event the subject index lists for it keeps its id, seq and chain
 * hash while its payload and metadata become the erasure marker; one signed erasure leaf (the
 * subject's keyed hash, the events' ids and hashes, the reason and the requester) is appended to
 * the audit log in the same transaction. The events leave the full-text index, their vectors and
 * their sessions' summaries become tombstones, their reflect state and the answers dataset runs
 * kept of them (evals) are dropped, and the in-memory
 * memos (verified chains, replays) forget the sessions. With encryption on, the subject's data
 * keys are retired in the same transaction and destroyed in the key store before the receipt is answered (crypto-shredding). A hold in force on the subject, one of the
 * sessions or their agents refuses it all (409); a subject no stored event names is 404.
 */
export async function eraseSubject(ctx: ObserveContext, log: ObserveAuditLog, subjectId: string, reason: string, actor: ChangeActor): Promise<ErasureReceipt> {
  const { database } = ctx;
  const subject = ctx.subjects.hash(subjectId);
  const erasureId = newId();
  const marker = erasureMarker(erasureId);
  const now = ctx.clock.now();
  const receipt = await database.db.transaction().execute(async (trx) => {
    const indexed = await trx.selectFrom('event_subjects').select(['event_id', 'session_id']).where('subject_hash', '=', subject).execute();
    if (indexed.length === 0) throw observeError('subjectNotFound');
    const sessionIds = [...new Set(indexed.map((row) => row.session_id))].sort();
    // The sessions locked in id order (ingest's lock order): retention cannot delete one meanwhile.
    const sessions = await forUpdate(
      trx.selectFrom('sessions').select(['id', 'agent_id']).where('id', 'in', sessionIds).orderBy('id'),
      database.dialect,
    ).execute();
    await refuseHeld(trx, { subjects: [subject], sessions: sessionIds, agents: [...new Set(sessions.map((s) => s.agent_id))] });
    const eventIds = [...new Set(indexed.map((row) => row.event_id))].sort();
    const events: { id: string; hash: string }[] = [];
    for (let i = 0; i < eventIds.length; i += CHUNK) {
      const rows = await trx
        .selectFrom('events')
        .select(['id', 'hash'])
        .where('id', 'in', eventIds.slice(i, i + CHUNK))
        .execute();
      for (const row of rows) events.push({ id: row.id, hash: hashHex(row.hash) });
    }
    const body = erasureLeafBody({
      erasureId,
      log: OBSERVE_LOG,
      subject,
      reason,
      requestedBy: actor.actor,
      timestamp: toIso(now),
      keyId: log.key.keyId,
      events,
    });
    const signature = signBytes(log.key, Buffer.from(body, 'utf8'));
    const index = await log.append(trx, [{ itemId: erasureId, scopeId: null, kind: ERASURE_LEAF, data: Buffer.from(body, 'utf8') }]);
    await trx
      .insertInto('audit_erasures')
      .values({ erasure_id: erasureId, leaf_idx: index, subject_hash: subject, body, signature, created_at: now })
      .execute();
    const erased = events.map((event) => event.id);
    for (let i = 0; i < erased.length; i += CHUNK) {
      const chunk = erased.slice(i, i + CHUNK);
      await dropFromFullTextIndex(trx, database.dialect, 'events', chunk);
      await trx.updateTable('events').set({ payload: marker.payload, metadata: marker.metadata }).where('id', 'in', chunk).execute();
      await trx.deleteFrom('event_subjects').where('event_id', 'in', chunk).execute();
    }
    await forgetEmbeddings(trx, database.dialect, erased, sessionIds, now);
    await forgetReflectState(trx, sessionIds);
    await forgetCaseAnswers(trx, sessionIds);
    // Crypto-shredding: the subject's data keys are retired now and destroyed once this commits, so
    // a copy taken before holds nothing readable; a destruction the process did not live to do is
    // recorded here and finished by the job.
    const destroyedKeys = ctx.sealer.enabled ? await ctx.sealer.retireSubjectKeys(trx, subject, erasureId, now) : [];
    return {
      erasureId,
      subject,
      reason,
      requestedBy: actor.actor,
      erasedAt: toIso(now),
      eventCount: events.length,
      sessionIds,
      leaf: { index, body, signature, keyId: log.key.keyId, publicKey: log.key.publicKey.toString('base64') },
      hashes: events.map((event) => event.hash),
      destroyedKeys,
    };
  });
  const { hashes, destroyedKeys, ...answer } = receipt;
  // The receipt is answered only once the keys are gone; a store that fails leaves them to the job.
  if (destroyedKeys.length > 0) {
    await ctx.sealer.destroy(database.db, destroyedKeys).catch(() => {
      throw observeError(
        'unavailable',
        `Erasure ${erasureId} is committed, its data keys not destroyed yet: the key store did not answer. They are destroyed by a background job; GET /api/erasures/${erasureId} answers the receipt once they are`,
      );
    });
  }
  forgetMatchedLinks(hashes);
  forgetVerifiedSessions(answer.sessionIds);
  forgetReplays(ctx, answer.sessionIds);
  await compactFullTextIndex(database.db, database.dialect, 'events');
  // The index drops (and wipes) the tombstoned vectors now, not at the next search.
  if (ctx.embedder.dimensions > 0) await ctx.vectorIndex.refresh(ctx.embedder.model, ctx.embedder.dimensions);
  return answer;
}

/** An erasure's receipt as it was answered, from its stored leaf; undefined when there is none. */
export async function findErasureReceipt(ctx: ObserveContext, log: ObserveAuditLog, erasureId: string): Promise<ErasureReceipt | undefined> {
  const row = await ctx.database.db.selectFrom('audit_erasures').selectAll().where('erasure_id', '=', erasureId).executeTakeFirst();
  if (row === undefined) return undefined;
  // Nor is it answered later while the erasure's data keys are not destroyed (its process died first).
  await ctx.sealer.finishDestructions(ctx.database.db, erasureId);
  const body = JSON.parse(row.body) as { subject: string; reason: string; requestedBy: string; timestamp: string; keyId: string; events: { id: string }[] };
  const keys = await log.keys();
  const key = keys.find((k) => k.keyId === body.keyId);
  const sessions = await ctx.database.db
    .selectFrom('events')
    .select('session_id')
    .distinct()
    .where('id', 'in', body.events.map((e) => e.id).slice(0, 10_000))
    .execute();
  return {
    erasureId,
    subject: body.subject,
    reason: body.reason,
    requestedBy: body.requestedBy,
    erasedAt: body.timestamp,
    eventCount: body.events.length,
    sessionIds: sessions.map((s) => s.session_id).sort(),
    leaf: { index: Number(row.leaf_idx), body: row.body, signature: row.signature, keyId: body.keyId, publicKey: key?.publicKey ?? '' },
  };
}
