import { forUpdate, newId, signBytes, toIso, type ChangeActor } from '@vigil/platform';
import { GATE_LOG } from '../audit-log/index.ts';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import { assertLockedRowEvidence, loggedTrails, storedRequestState, type LoggedAuditRow } from '../requests/index.ts';
import { erasedReasonText, erasureMarkerText, gateErasureLeafBody } from '../stored-formats/index.ts';
import type { GateErasureReceipt } from './schemas.ts';

/** The kind of an erasure's leaf (the leaves' `kind` column). */
export const ERASURE_LEAF = 'erasure';

/** Entries whose details carry no one's content (the request hash, the escalation step) and that the row check needs as written. */
const KEPT_DETAILS = new Set(['created', 'escalated']);

const DECIDED = ['approved', 'denied', 'expired'];

/** Requests (and entries) rewritten per statement. */
const CHUNK = 500;

/**
 * Erases a data subject from the gate: every request the subject index lists for it keeps its id,
 * status, times, chain and head while its params, context, decision reason and execution result
 * become the erasure marker, and so do the details of its audit entries but `created` and
 * `escalated`; its webhook deliveries are deleted. One signed erasure leaf (the subject's keyed
 * hash, each request's id and requestHash, each erased entry's id and chain hash, the reason and the
 * requester) is appended to the audit log in the same transaction. 404 when no request names the
 * subject; 409 while one of its requests is pending (a decision is still to be made on its content);
 * a request whose row no longer matches its trail is refused (requestTampered), not laundered.
 */
export async function eraseSubject(ctx: GateContext, subjectId: string, reason: string, actor: ChangeActor): Promise<GateErasureReceipt> {
  const { database, auditLog: log } = ctx;
  const subject = ctx.subjects.hash(subjectId);
  const erasureId = newId();
  const marker = erasureMarkerText(erasureId);
  const now = ctx.clock.now();
  return database.db.transaction().execute(async (trx) => {
    const indexed = await trx.selectFrom('request_subjects').select('request_id').where('subject_hash', '=', subject).execute();
    if (indexed.length === 0) throw gateError('subjectNotFound');
    const ids = [...new Set(indexed.map((row) => row.request_id))].sort();
    // Locked in id order, as a group of decisions locks them.
    const rows = await forUpdate(trx.selectFrom('requests').selectAll().where('id', 'in', ids).orderBy('id'), database.dialect).execute();
    const pending = rows.filter((row) => row.status === 'pending');
    if (pending.length > 0)
      throw gateError(
        'subjectRequestPending',
        undefined,
        pending.map((row) => ({ path: 'requests', message: `request ${row.id} is pending` })),
      );
    const entries: LoggedAuditRow[] = [];
    for (let i = 0; i < rows.length; i += CHUNK) {
      const chunk = rows.slice(i, i + CHUNK);
      const trails = await loggedTrails(
        trx,
        chunk.map((row) => row.id),
      );
      for (const row of chunk) {
        const trail = trails.get(row.id) ?? [];
        await assertLockedRowEvidence(trx, row, trail);
        entries.push(...trail.filter((entry) => entry.details !== null && !KEPT_DETAILS.has(entry.event)));
      }
    }
    const body = gateErasureLeafBody({
      erasureId,
      log: GATE_LOG,
      subject,
      reason,
      requestedBy: actor.actor,
      timestamp: toIso(now),
      keyId: log.key.keyId,
      events: entries.map((entry) => ({ id: entry.id, hash: entry.hash })),
      requests: rows.map((row) => ({ id: row.id, requestHash: storedRequestState(row).requestHash })),
    });
    for (let i = 0; i < ids.length; i += CHUNK) {
      const chunk = ids.slice(i, i + CHUNK);
      await trx.updateTable('requests').set({ params: marker, context: marker }).where('id', 'in', chunk).execute();
      await trx
        .updateTable('requests')
        .set({ decision_reason: erasedReasonText(erasureId) })
        .where('id', 'in', chunk)
        .where('status', 'in', DECIDED)
        .execute();
      await trx.updateTable('requests').set({ execution_result: marker }).where('id', 'in', chunk).where('execution_result', 'is not', null).execute();
      await trx.deleteFrom('request_subjects').where('request_id', 'in', chunk).execute();
      // The outbox's bodies carry each request as it was: its deliveries, sent or not, go with it.
      await trx
        .deleteFrom('deliveries')
        .where((eb) => eb.or(chunk.map((id) => eb('body', 'like', `%${id}%`))))
        .execute();
    }
    for (let i = 0; i < entries.length; i += CHUNK)
      await trx
        .updateTable('audit_entries')
        .set({ details: marker })
        .where(
          'id',
          'in',
          entries.slice(i, i + CHUNK).map((entry) => entry.id),
        )
        .execute();
    const signature = signBytes(log.key, Buffer.from(body, 'utf8'));
    // The log's head lock last (audit-log/log.ts).
    const index = await log.append(trx, [{ itemId: erasureId, scopeId: null, kind: ERASURE_LEAF, data: Buffer.from(body, 'utf8') }]);
    await trx
      .insertInto('audit_erasures')
      .values({ erasure_id: erasureId, leaf_idx: index, subject_hash: subject, body, signature, created_at: now })
      .execute();
    return {
      erasureId,
      subject,
      reason,
      requestedBy: actor.actor,
      erasedAt: toIso(now),
      requestCount: ids.length,
      requestIds: ids,
      leaf: { index, body, signature, keyId: log.key.keyId, publicKey: log.key.publicKey.toString('base64') },
    };
  });
}

/** An erasure's receipt as it was answered, from its stored leaf; undefined when there is none. */
export async function findErasureReceipt(ctx: GateContext, erasureId: string): Promise<GateErasureReceipt | undefined> {
  const row = await ctx.database.db.selectFrom('audit_erasures').selectAll().where('erasure_id', '=', erasureId).executeTakeFirst();
  if (row === undefined) return undefined;
  const body = JSON.parse(row.body) as { subject: string; reason: string; requestedBy: string; timestamp: string; keyId: string; requests: { id: string }[] };
  const key = (await ctx.auditLog.keys()).find((k) => k.keyId === body.keyId);
  return {
    erasureId,
    subject: body.subject,
    reason: body.reason,
    requestedBy: body.requestedBy,
    erasedAt: body.timestamp,
    requestCount: body.requests.length,
    requestIds: body.requests.map((request) => request.id),
    leaf: { index: Number(row.leaf_idx), body: row.body, signature: row.signature, keyId: body.keyId, publicKey: key?.publicKey ?? '' },
  };
}
