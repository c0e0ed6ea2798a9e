import { type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { identifier } from '../events/index.ts';
import { findCheckpoint, makeCheckpoint, publicKeyFromRaw, type SigningKey } from './checkpoints.ts';
import { consistencyPath, inclusionPath, leafOfEvent, logSize } from './store.ts';

const hex = z.string().regex(/^[0-9a-f]{64}$/);
const treeSize = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

const checkpointSchema = z
  .object({
    treeSize: z.number().int(),
    rootHash: hex.describe('MTH of the first treeSize leaves (RFC 9162), hex'),
    timestamp: z.string(),
    keyId: z.string().describe('Hex of the first 16 bytes of SHA-256 of the raw Ed25519 public key'),
    signature: z.string().describe('Base64 Ed25519 signature over the canonical JSON of {keyId, log: "vigil-observe", rootHash, timestamp, treeSize} (docs/audit.md)'),
  })
  .describe('A signed tree head of the audit log');

export function registerAuditLogRoutes(app: ZodApp, ctx: ObserveContext, key: SigningKey): void {
  const db = ctx.database.db;

  app.get(
    '/api/audit/public-key',
    {
      schema: {
        summary: "The audit log's checkpoint signing keys",
        description: '`keyId`, `publicKey` and `publicKeyPem` are the current key; `keys` lists every key that has signed checkpoints, current one included.',
        tags: ['audit'],
        response: {
          200: z.object({
            algorithm: z.literal('Ed25519'),
            keyId: z.string(),
            publicKey: z.string().describe('Base64 of the raw 32-byte public key'),
            publicKeyPem: z.string(),
            keys: z.array(z.object({ keyId: z.string(), publicKey: z.string(), createdAt: z.number().int() })),
          }),
        },
      },
    },
    async () => {
      const keys = await db.selectFrom('audit_keys').selectAll().orderBy('created_at').execute();
      return {
        algorithm: 'Ed25519' as const,
        keyId: key.keyId,
        publicKey: key.publicKey.toString('base64'),
        publicKeyPem: publicKeyFromRaw(key.publicKey).export({ format: 'pem', type: 'spki' }) as string,
        keys: keys.map((row) => ({ keyId: row.key_id, publicKey: row.public_key, createdAt: Number(row.created_at) })),
      };
    },
  );

  app.get(
    '/api/audit/checkpoint',
    {
      schema: {
        summary: 'The latest signed checkpoint of the audit log, or the one at a tree size',
        tags: ['audit'],
        querystring: z.object({ treeSize: treeSize.optional() }),
        response: { 200: checkpointSchema },
      },
    },
    async (request) => {
      const checkpoint = await findCheckpoint(db, request.query.treeSize);
      if (checkpoint === undefined) throw observeError('checkpointNotFound');
      return checkpoint;
    },
  );

  app.post(
    '/api/audit/checkpoint',
    {
      schema: {
        summary: 'Sign a checkpoint at the current tree size now',
        description: 'Answers the existing checkpoint when one was already signed at the current size.',
        tags: ['audit'],
        response: { 201: checkpointSchema },
      },
    },
    async (_request, reply) => reply.status(201).send(await makeCheckpoint(db, key, ctx.clock.now())),
  );

  app.get(
    '/api/audit/consistency',
    {
      schema: {
        summary: 'A consistency proof between two tree sizes (RFC 9162 §2.1.4)',
        description: 'Verify with the roots of the checkpoints at `from` and `to`. Empty when from = to, or from = 0.',
        tags: ['audit'],
        querystring: z.object({ from: treeSize, to: treeSize }),
        response: { 200: z.object({ from: z.number().int(), to: z.number().int(), proof: z.array(hex) }) },
      },
    },
    async (request) => {
      const { from, to } = request.query;
      if (from > to || to > (await logSize(db))) throw observeError('auditTreeSize');
      const proof = from === 0 ? [] : await consistencyPath(db, from, to);
      return { from, to, proof: proof.map((hash) => hash.toString('hex')) };
    },
  );

  app.get(
    '/api/audit/inclusion',
    {
      schema: {
        summary: "An event's inclusion proof (RFC 9162 §2.1.3)",
        description: "The audit path of the event's leaf in the tree of `treeSize` leaves (default: the latest checkpoint's). The leaf hash is SHA-256(0x00 || the event's 32-byte hash).",
        tags: ['audit'],
        querystring: z.object({ eventId: identifier, treeSize: treeSize.optional() }),
        response: {
          200: z.object({ eventId: z.string(), leafIndex: z.number().int(), leafHash: hex, treeSize: z.number().int(), proof: z.array(hex) }),
        },
      },
    },
    async (request) => {
      const { eventId } = request.query;
      let size = request.query.treeSize;
      if (size === undefined) {
        const latest = await findCheckpoint(db);
        if (latest === undefined) throw observeError('checkpointNotFound');
        size = latest.treeSize;
      }
      const leaf = await leafOfEvent(db, eventId);
      if (leaf === undefined) throw observeError('eventNotFound');
      if (leaf.index >= size || size > (await logSize(db))) throw observeError('auditTreeSize');
      const proof = await inclusionPath(db, leaf.index, size);
      return { eventId, leafIndex: leaf.index, leafHash: leaf.leafHash, treeSize: size, proof: proof.map((hash) => hash.toString('hex')) };
    },
  );
}
