import { readSnapshot, sendJsonText, toIso, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { CHAIN_COLUMNS, chainTextOf, identifier } from '../events/index.ts';
import type { ObserveAuditLog } from './index.ts';

/**
 * What `vigil verify` reads (docs/audit.md): a session's export bundle, and for the whole-log audit
 * the leaves in order with their events, the events that have no leaf, and the sessions' heads.
 * Everything is answered as stored, tampered or not: the verifier is what judges it.
 */

export const BUNDLE_FORMAT = 'vigil-audit-bundle/1';

const hex = z.string().regex(/^[0-9a-f]{64}$/);
const treeSize = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const pageLimit = z.coerce.number().int().min(1).max(1000).default(1000);

const checkpointSchema = z.object({ treeSize: z.number().int(), rootHash: hex, timestamp: z.string(), keyId: z.string(), signature: z.string() });

export function registerAuditWalkRoutes(app: ZodApp, ctx: ObserveContext, log: ObserveAuditLog): void {
  const db = ctx.database.db;

  app.get(
    '/api/audit/export',
    {
      schema: {
        summary: "A session's self-contained audit bundle (verify it with `vigil verify`)",
        description:
          'Every stored event of the session as the canonical text its chain hash is computed over, in seq order, with the recorded head, each event\'s leaf index and inclusion proof to a signed checkpoint (signed now when the latest one does not cover every leaf of the session), the key that signed it and, with `since`, a consistency proof from that tree size. Format `vigil-audit-bundle/1` (docs/audit.md).',
        tags: ['audit'],
        querystring: z.object({ sessionId: identifier, since: treeSize.optional() }),
        response: {
          200: z.object({
            format: z.literal(BUNDLE_FORMAT),
            log: z.string(),
            sessionId: z.string(),
            head: z.object({ seq: z.number().int(), hash: z.string().nullable() }),
            events: z.array(z.string()).describe('RFC 8785 canonical JSON of each event\'s chain object; its SHA-256 is the event hash'),
            leaves: z.array(z.object({ index: z.number().int(), proof: z.array(hex) }).nullable()),
            checkpoint: checkpointSchema,
            publicKey: z.string().describe('Base64 of the raw Ed25519 key that signed the checkpoint'),
            consistency: z.object({ from: z.number().int(), to: z.number().int(), proof: z.array(hex) }).optional(),
            exportedAt: z.string(),
          }),
        },
      },
    },
    async (request, reply) => {
      const { sessionId, since } = request.query;
      const stored = await readSnapshot(ctx.database, async (snapshot) => {
        const session = await snapshot.selectFrom('sessions').select(['last_seq', 'last_hash']).where('id', '=', sessionId).executeTakeFirst();
        if (session === undefined) return undefined;
        const rows = await snapshot.selectFrom('events').select(CHAIN_COLUMNS).where('session_id', '=', sessionId).orderBy('seq').orderBy('id').execute();
        return { session, rows };
      });
      if (stored === undefined) throw observeError('sessionNotFound');
      const { session, rows } = stored;
      const leaves = await log.leavesOf(rows.map((row) => row.id));
      let lastLeaf = -1;
      for (const leaf of leaves.values()) lastLeaf = Math.max(lastLeaf, leaf.index);
      let checkpoint = await log.findCheckpoint();
      if (checkpoint === undefined || checkpoint.treeSize <= lastLeaf) checkpoint = await log.checkpoint();
      if (since !== undefined && since > checkpoint.treeSize) throw observeError('auditTreeSize');
      const indices = rows.flatMap((row) => (leaves.has(row.id) ? [leaves.get(row.id)!.index] : []));
      const proofs = await log.inclusionPaths(indices, checkpoint.treeSize);
      let next = 0;
      const bundleLeaves = rows.map((row) => {
        const leaf = leaves.get(row.id);
        return leaf === undefined ? null : { index: leaf.index, proof: proofs[next++]!.map((hash) => hash.toString('hex')) };
      });
      const signer = (await log.keys()).find((key) => key.keyId === checkpoint.keyId);
      const consistency =
        since === undefined ? undefined : { from: since, to: checkpoint.treeSize, proof: (await log.consistencyPath(since, checkpoint.treeSize)).map((hash) => hash.toString('hex')) };
      const bundle = {
        format: BUNDLE_FORMAT,
        log: log.name,
        sessionId,
        head: { seq: session.last_seq, hash: session.last_hash },
        events: rows.map(chainTextOf),
        leaves: bundleLeaves,
        checkpoint,
        publicKey: signer?.publicKey ?? '',
        ...(consistency === undefined ? {} : { consistency }),
        exportedAt: toIso(ctx.clock.now()),
      };
      return sendJsonText(reply, JSON.stringify(bundle));
    },
  );

  app.get(
    '/api/audit/leaves',
    {
      schema: {
        summary: 'The audit log\'s leaves from an index, in order, with their events',
        description:
          'An index range of the log (at most `limit`), each leaf with its session, its event as the canonical text its hash is computed over (null when the event row is gone) and, for a retention tombstone, its signed body. `treeSize` is the log\'s size now.',
        tags: ['audit'],
        querystring: z.object({ from: treeSize.default(0), limit: pageLimit }),
        response: {
          200: z.object({
            treeSize: z.number().int(),
            leaves: z.array(
              z.object({
                index: z.number().int(),
                leafHash: z.string(),
                sessionId: z.string().nullable(),
                eventId: z.string().nullable(),
                event: z.string().nullable(),
                tombstone: z.object({ body: z.string(), signature: z.string() }).nullable(),
              }),
            ),
          }),
        },
      },
    },
    async (request, reply) => {
      const { from, limit } = request.query;
      const [size, stored] = await Promise.all([log.size(), log.leaves(from, limit)]);
      const eventIds = stored.filter((leaf) => leaf.tombstone === null).map((leaf) => leaf.itemId);
      const rows = eventIds.length === 0 ? [] : await db.selectFrom('events').select(CHAIN_COLUMNS).where('id', 'in', eventIds).execute();
      const events = new Map(rows.map((row) => [row.id, chainTextOf(row)]));
      const leaves = stored.map((leaf) => ({
        index: leaf.index,
        leafHash: leaf.leafHash,
        sessionId: leaf.scopeId,
        eventId: leaf.tombstone === null ? leaf.itemId : null,
        event: leaf.tombstone === null ? (events.get(leaf.itemId) ?? null) : null,
        tombstone: leaf.tombstone,
      }));
      return sendJsonText(reply, JSON.stringify({ treeSize: size, leaves }));
    },
  );

  app.get(
    '/api/audit/unlogged',
    {
      schema: {
        summary: 'Stored events that have no leaf in the audit log',
        description: 'Events written outside the service\'s write path (every event it stores gets its leaf in the same transaction). Paged by event id; `nextCursor` is null on the last page. Scans the events table.',
        tags: ['audit'],
        querystring: z.object({ cursor: z.string().optional(), limit: pageLimit }),
        response: {
          200: z.object({ events: z.array(z.object({ sessionId: z.string(), seq: z.number().int(), eventId: z.string() })), nextCursor: z.string().nullable() }),
        },
      },
    },
    async (request) => {
      const { cursor, limit } = request.query;
      let query = db
        .selectFrom('events as e')
        .leftJoin('audit_log_leaves as l', 'l.item_id', 'e.id')
        .select(['e.id', 'e.session_id', 'e.seq'])
        .where('l.idx', 'is', null)
        .orderBy('e.id')
        .limit(limit);
      if (cursor !== undefined) query = query.where('e.id', '>', cursor);
      const rows = await query.execute();
      return {
        events: rows.map((row) => ({ sessionId: row.session_id, seq: row.seq, eventId: row.id })),
        nextCursor: rows.length === limit ? rows[rows.length - 1]!.id : null,
      };
    },
  );

  app.get(
    '/api/audit/heads',
    {
      schema: {
        summary: "Every session's recorded chain head",
        description: 'Sessions by id after `after` (keyset pages); `headSeq` is −1 and `headHash` null for a session without events. `nextCursor` is null on the last page.',
        tags: ['audit'],
        querystring: z.object({ after: z.string().optional(), limit: pageLimit }),
        response: {
          200: z.object({
            sessions: z.array(z.object({ sessionId: z.string(), headSeq: z.number().int(), headHash: z.string().nullable() })),
            nextCursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      const { after, limit } = request.query;
      let query = db.selectFrom('sessions').select(['id', 'last_seq', 'last_hash']).orderBy('id').limit(limit);
      if (after !== undefined) query = query.where('id', '>', after);
      const rows = await query.execute();
      return {
        sessions: rows.map((row) => ({ sessionId: row.id, headSeq: row.last_seq, headHash: row.last_hash })),
        nextCursor: rows.length === limit ? rows[rows.length - 1]!.id : null,
      };
    },
  );
}
