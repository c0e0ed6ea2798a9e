import { z } from 'zod';
import { publicKeyFromRaw } from './audit-keys.ts';
import { AuditLogIncompleteError, CosignatureRefused, type AuditLog, type AuditLogTables } from './audit-log.ts';
import { parseTilePath } from './signed-note.ts';
import { isoTimestampMs, toIso } from './time.ts';
import type { ErrorFactory } from './errors.ts';
import type { RouteScope, ZodApp } from './http.ts';

/** The errors the log's routes raise; each service's catalogue defines them. */
export type AuditLogErrorKey =
  'checkpointNotFound' | 'auditTreeSize' | 'auditItemNotFound' | 'auditLogIncomplete' | 'auditTileNotFound' | 'auditCosignatureInvalid';

/** The status of `auditLogIncomplete` (each catalogue's entry says it): the log's rows were deleted, a state the request cannot change. */
export const AUDIT_LOG_INCOMPLETE_STATUS = 409;

/**
 * Runs a read of the log's roots or proofs; a log whose rows were deleted (AuditLogIncompleteError)
 * is answered as the service's `auditLogIncomplete` error naming what is missing, never a 500.
 */
export async function provingFromLog<T>(errors: ErrorFactory<'auditLogIncomplete'>, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof AuditLogIncompleteError) throw errors('auditLogIncomplete', error.message);
    throw error;
  }
}

/** A SHA-256 hash as the audit routes answer it: lowercase hex. */
export const auditHashSchema = z.string().regex(/^[0-9a-f]{64}$/);
/** A tree size in a query string. */
export const auditTreeSizeQuery = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const hex = auditHashSchema;
const treeSize = auditTreeSizeQuery;

export function auditCheckpointSchema(log: string) {
  return z
    .object({
      treeSize: z.number().int(),
      rootHash: hex.describe('MTH of the first treeSize leaves (RFC 9162), hex'),
      timestamp: z.string(),
      keyId: z.string().describe('Hex of the first 16 bytes of SHA-256 of the raw Ed25519 public key'),
      signature: z
        .string()
        .describe(`Base64 Ed25519 signature over the canonical JSON of {keyId, log: "${log}", rootHash, timestamp, treeSize} (docs/audit.md)`),
    })
    .describe('A signed tree head of the audit log');
}

export interface AuditLogRouteOptions<Schema extends AuditLogTables> {
  log: AuditLog<Schema>;
  errors: ErrorFactory<AuditLogErrorKey>;
  /** The query parameter naming an item of the inclusion proof (`eventId`, `entryId`) and what it is. */
  item: { parameter: string; schema: z.ZodType<string>; describe: string };
  /** The service's scopes: reading the log and its proofs, and signing a checkpoint on demand. */
  scopes: { read: RouteScope; sign: RouteScope };
}

/** Where the C2SP views of the log are served: a tlog-tiles client's `<prefix>` (docs/audit.md). */
export const TLOG_PREFIX = '/api/audit/tlog';

/**
 * GET /api/audit/public-key, GET|POST /api/audit/checkpoint, GET /api/audit/consistency and
 * GET /api/audit/inclusion of a service's log, named alike in both services' documents; and its
 * C2SP views under TLOG_PREFIX: the checkpoint note with its cosignatures, the hash tiles, and the
 * submission of cosignatures.
 */
export function registerAuditLogRoutes<Schema extends AuditLogTables>(app: ZodApp, options: AuditLogRouteOptions<Schema>): void {
  const { log, errors, item, scopes } = options;
  const checkpointSchema = auditCheckpointSchema(log.name);

  app.get(
    '/api/audit/public-key',
    {
      config: { scope: scopes.read },
      schema: {
        operationId: 'getAuditPublicKey',
        summary: "The audit log's checkpoint signing keys",
        description:
          '`keyId`, `publicKey` and `publicKeyPem` are the current key; `keys` lists every key that has signed checkpoints, current one included. A listed key proves nothing by itself (anyone who writes the database can add one): verifiers trust a pinned key and the keys certified by one (docs/audit.md).',
        tags: ['audit'],
        response: {
          200: z.object({
            algorithm: z.literal('Ed25519'),
            log: z.string().describe('The log name the signatures cover'),
            keyId: z.string(),
            publicKey: z.string().describe('Base64 of the raw 32-byte public key'),
            publicKeyPem: z.string(),
            keys: z.array(
              z.object({
                keyId: z.string(),
                publicKey: z.string(),
                createdAt: z.number().int(),
                certificate: z
                  .object({
                    leafIndex: z.number().int().describe('The key-rotation leaf whose data `body` is'),
                    body: z.string().describe('Canonical JSON {v: 1, kind: "key-rotation", log, keyId, publicKey, previousKeyId, timestamp}'),
                    signature: z.string().describe('Base64 Ed25519 signature over `body` by the previous key (`previousKeyId`)'),
                  })
                  .nullable()
                  .describe('The certificate of this key by the key it replaced (AUDIT_PREVIOUS_SIGNING_KEY); null for a key no previous key certified'),
              }),
            ),
            origin: z.string().describe('The origin line of the C2SP checkpoint notes (GET /api/audit/tlog/checkpoint)'),
            noteVerifierKey: z
              .string()
              .describe(
                'The current key as a signed-note verifier key, `<key name>+<key hash>+<base64(0x01 || key)>`: what C2SP clients and witnesses are configured with',
              ),
          }),
        },
      },
    },
    async () => ({
      algorithm: 'Ed25519' as const,
      log: log.name,
      keyId: log.key.keyId,
      publicKey: log.key.publicKey.toString('base64'),
      publicKeyPem: publicKeyFromRaw(log.key.publicKey).export({ format: 'pem', type: 'spki' }) as string,
      keys: await log.keys(),
      origin: log.origin,
      noteVerifierKey: log.noteVerifierKey,
    }),
  );

  app.get(
    '/api/audit/checkpoint',
    {
      config: { scope: scopes.read },
      schema: {
        operationId: 'getAuditCheckpoint',
        errorStatuses: [404],
        summary: 'The latest signed checkpoint of the audit log, or the one at a tree size',
        tags: ['audit'],
        querystring: z.object({ treeSize: treeSize.optional() }),
        response: { 200: checkpointSchema },
      },
    },
    async (request) => {
      const checkpoint = await log.findCheckpoint(request.query.treeSize);
      if (checkpoint === undefined) throw errors('checkpointNotFound');
      return checkpoint;
    },
  );

  app.post(
    '/api/audit/checkpoint',
    {
      config: { scope: scopes.sign },
      schema: {
        operationId: 'createAuditCheckpoint',
        errorStatuses: [AUDIT_LOG_INCOMPLETE_STATUS],
        summary: 'Sign a checkpoint at the current tree size now',
        description: 'Answers the existing checkpoint when one was already signed at the current size.',
        tags: ['audit'],
        response: { 201: checkpointSchema },
      },
    },
    async (_request, reply) => reply.status(201).send(await provingFromLog(errors, () => log.checkpoint())),
  );

  app.get(
    '/api/audit/consistency',
    {
      config: { scope: scopes.read },
      schema: {
        operationId: 'getAuditConsistencyProof',
        errorStatuses: [AUDIT_LOG_INCOMPLETE_STATUS],
        summary: 'A consistency proof between two tree sizes (RFC 9162 §2.1.4)',
        description: 'Verify with the roots of the checkpoints at `from` and `to`. Empty when from = to, or from = 0.',
        tags: ['audit'],
        querystring: z.object({ from: treeSize, to: treeSize }),
        response: { 200: z.object({ from: z.number().int(), to: z.number().int(), proof: z.array(hex) }) },
      },
    },
    async (request) => {
      const { from, to } = request.query;
      if (from > to || to > (await log.size())) throw errors('auditTreeSize');
      const proof = await provingFromLog(errors, () => log.consistencyPath(from, to));
      return { from, to, proof: proof.map((hash) => hash.toString('hex')) };
    },
  );

  app.get(
    '/api/audit/inclusion',
    {
      config: { scope: scopes.read },
      schema: {
        operationId: 'getAuditInclusionProof',
        errorStatuses: [404, AUDIT_LOG_INCOMPLETE_STATUS],
        summary: `An inclusion proof (RFC 9162 §2.1.3) of ${item.describe}`,
        description: `The audit path of the leaf of ${item.describe} in the tree of \`treeSize\` leaves (default: the latest checkpoint's). The leaf hash is SHA-256(0x00 || its 32-byte hash).`,
        tags: ['audit'],
        querystring: z.object({ [item.parameter]: item.schema, treeSize: treeSize.optional() }),
        response: {
          200: z.object({
            [item.parameter]: z.string(),
            leafIndex: z.number().int(),
            leafHash: hex,
            treeSize: z.number().int(),
            proof: z.array(hex),
          }),
        },
      },
    },
    async (request) => {
      const query = request.query as Record<string, unknown> & { treeSize?: number };
      const itemId = query[item.parameter] as string;
      let size = query.treeSize;
      // The latest checkpoint's size is within the log and built: two reads fewer on the common path.
      const checkpointed = size === undefined;
      if (size === undefined) {
        const latest = await log.findCheckpoint();
        if (latest === undefined) throw errors('checkpointNotFound');
        size = latest.treeSize;
      }
      const leaf = await log.leafOf(itemId);
      if (leaf === undefined) throw errors('auditItemNotFound');
      if (leaf.index >= size || (!checkpointed && size > (await log.size()))) throw errors('auditTreeSize');
      const proof = await provingFromLog(errors, () => log.inclusionPath(leaf.index, size, checkpointed));
      return { [item.parameter]: itemId, leafIndex: leaf.index, leafHash: leaf.leafHash, treeSize: size, proof: proof.map((hash) => hash.toString('hex')) };
    },
  );

  registerEvidenceRoutes(app, options);
  registerTlogRoutes(app, options);
}

/** The most checkpoints one answer of GET /api/audit/checkpoints lists. */
export const EVIDENCE_CHECKPOINT_LIMIT = 100_000;

/** What an evidence pack (`vigil evidence`, docs/audit.md) reads of the log beyond its proofs, and the signature of its manifest. */
function registerEvidenceRoutes<Schema extends AuditLogTables>(app: ZodApp, options: AuditLogRouteOptions<Schema>): void {
  const { log, scopes } = options;
  const checkpointSchema = auditCheckpointSchema(log.name);
  const period = z.object({ from: isoTimestampMs, to: isoTimestampMs });

  app.get(
    '/api/audit/checkpoints',
    {
      config: { scope: scopes.read },
      schema: {
        operationId: 'listAuditCheckpoints',
        summary: 'The checkpoints signed in a period, with their C2SP notes and cosignatures',
        description: `In tree-size order: the last checkpoint signed before \`from\` (when there is one: what the period's first extends), then those signed from \`from\` to \`to\` (inclusive), at most ${EVIDENCE_CHECKPOINT_LIMIT}; \`truncated\` says there were more.`,
        tags: ['audit'],
        querystring: period,
        response: {
          200: z.object({
            checkpoints: z.array(
              z.object({
                checkpoint: checkpointSchema,
                note: z.string().nullable().describe('The same tree head as a C2SP signed note; null for checkpoints signed before notes were'),
                cosignatures: z.array(z.string()).describe("The witnesses' cosignature lines (tlog-cosignature) stored for it"),
              }),
            ),
            truncated: z.boolean(),
          }),
        },
      },
    },
    async (request) => {
      const { from, to } = request.query;
      return log.checkpointsBetween(from, to, EVIDENCE_CHECKPOINT_LIMIT);
    },
  );

  app.get(
    '/api/audit/tombstones',
    {
      config: { scope: scopes.read },
      schema: {
        operationId: 'listAuditTombstones',
        summary: 'The signed tombstones of a period (scopes the service removed from its log)',
        description:
          'Each tombstone leaf whose timestamp lies from `from` to `to` (inclusive), in log order: its leaf data (`body`, canonical JSON) and the audit key’s signature over those bytes (docs/audit.md).',
        tags: ['audit'],
        querystring: period,
        response: {
          200: z.object({
            tombstones: z.array(z.object({ leafIndex: z.number().int(), scopeId: z.string(), body: z.string(), signature: z.string() })),
          }),
        },
      },
    },
    async (request) => ({ tombstones: await log.tombstonesBetween(toIso(request.query.from), toIso(request.query.to)) }),
  );

  app.post(
    '/api/audit/evidence-signature',
    {
      config: { scope: scopes.sign },
      schema: {
        operationId: 'signEvidenceManifest',
        summary: "Sign an evidence pack's manifest digest with the audit key",
        description:
          'Answers the Ed25519 signature, by the current audit key, over the canonical JSON of {keyId, kind: "evidence-manifest", log, manifestSha256, timestamp} (docs/audit.md, "Evidence packs"). Each signing is written to the service log with the digest and the API key that asked.',
        tags: ['audit'],
        body: z.object({ manifestSha256: auditHashSchema.describe('SHA-256 of the manifest file, lowercase hex') }).strict(),
        response: {
          201: z.object({ log: z.string(), keyId: z.string(), publicKey: z.string(), timestamp: z.string(), signature: z.string() }),
        },
      },
    },
    async (request, reply) => {
      const signed = log.signEvidenceManifest(request.body.manifestSha256);
      request.log.info({ manifestSha256: request.body.manifestSha256, keyId: signed.keyId }, 'evidence manifest signed');
      return reply.status(201).send(signed);
    },
  );
}

function registerTlogRoutes<Schema extends AuditLogTables>(app: ZodApp, options: AuditLogRouteOptions<Schema>): void {
  const { log, errors, scopes } = options;

  app.get(
    `${TLOG_PREFIX}/checkpoint`,
    {
      config: { scope: scopes.read },
      schema: {
        operationId: 'getAuditCheckpointNote',
        errorStatuses: [404],
        summary: 'The latest checkpoint as a C2SP signed note, with its cosignatures',
        description:
          "text/plain: the tlog-checkpoint text (origin AUDIT_LOG_ORIGIN, by default `<log>/<keyId>`; tree size; base64 root hash), a blank line, the log's Ed25519 note signature (key name AUDIT_NOTE_KEY_NAME, by default the origin; its verifier key is `noteVerifierKey` of GET /api/audit/public-key), then every stored tlog-cosignature v1 line of the witnesses (docs/audit.md).",
        tags: ['audit'],
        response: { 200: { description: 'The signed note', content: { 'text/plain': { schema: z.string() } } } },
      },
    },
    async (_request, reply) => {
      const latest = await log.checkpointNote();
      if (latest === undefined) throw errors('checkpointNotFound');
      return reply.type('text/plain; charset=utf-8').header('cache-control', 'no-cache').send(latest.note);
    },
  );

  app.get(
    `${TLOG_PREFIX}/tile/*`,
    {
      config: { scope: scopes.read },
      schema: {
        operationId: 'getAuditTile',
        errorStatuses: [404, AUDIT_LOG_INCOMPLETE_STATUS],
        summary: 'A hash tile of the audit log (c2sp.org/tlog-tiles)',
        description:
          'The path after `tile/` is `<L>/<N>[.p/<W>]` as tlog-tiles spells it (N in 3-digit groups, all but the last prefixed with x). The body is the W (256 for a full tile) concatenated 32-byte hashes: at level 0 leaf hashes, at level L the roots of the subtrees of 256^L leaves. Tiles within the latest checkpoint only; entry bundles (`tile/entries/…`) are never served: the content of what is logged does not leave Vigil.',
        tags: ['audit'],
        params: z.object({ '*': z.string() }),
        response: { 200: { description: 'The tile', content: { 'application/octet-stream': { schema: z.string().describe('W × 32 bytes') } } } },
      },
    },
    async (request, reply) => {
      const tile = parseTilePath(request.params['*']);
      if (tile === undefined) throw errors('auditTileNotFound', `"${request.params['*'].slice(0, 100)}" is not a hash tile path (<L>/<N>[.p/<W>], tlog-tiles)`);
      const hashes = await provingFromLog(errors, () => log.tile(tile));
      if (hashes === undefined) throw errors('auditTileNotFound', 'The tile is beyond the latest checkpoint');
      // Tiles never change once served: a full tile and a partial one of a given width hold the same hashes forever.
      return reply
        .type('application/octet-stream')
        .header('cache-control', 'public, max-age=31536000, immutable')
        .send(hashes as never);
    },
  );

  app.post(
    `${TLOG_PREFIX}/cosignatures`,
    {
      config: { scope: scopes.sign },
      schema: {
        operationId: 'addAuditCosignatures',
        errorStatuses: [422],
        summary: "Store witnesses' cosignatures of a checkpoint note",
        description:
          "`note` is a checkpoint note the log signed (its text byte for byte, as GET /api/audit/tlog/checkpoint served it) with cosignature lines appended: every line but the log's own must be a valid tlog-cosignature v1 by a witness of AUDIT_COSIGNERS, else the whole note is refused (422) and nothing is stored.",
        tags: ['audit'],
        body: z.object({
          note: z
            .string()
            .min(1)
            .max(64 * 1024),
        }),
        response: { 200: z.object({ treeSize: z.number().int(), added: z.number().int().describe('Cosignatures not stored before') }) },
      },
    },
    async (request) => {
      try {
        const { treeSize, added } = await log.addCosignatures(request.body.note);
        return { treeSize, added };
      } catch (error) {
        if (error instanceof CosignatureRefused) throw errors('auditCosignatureInvalid', error.message);
        throw error;
      }
    },
  );
}
