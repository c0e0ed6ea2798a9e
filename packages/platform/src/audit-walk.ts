import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import { headProofAt, headsLeavesIn } from './audit-heads.ts';
import { CHANGE_LEAF, type AuditLog, type AuditLogTables } from './audit-log.ts';
import { AUDIT_LOG_INCOMPLETE_STATUS, auditCheckpointSchema, auditHashSchema, auditTreeSizeQuery, provingFromLog } from './audit-routes.ts';
import { changeText, type AdminChangeTables } from './change-log.ts';
import type { ErrorFactory } from './errors.ts';
import { sendJsonText, type RouteScope, type ZodApp } from './http.ts';
import type { Clock } from './clock.ts';
import { tablesOf } from './db.ts';
import { toIso } from './time.ts';

/**
 * What `vigil verify` reads of a service's audit log (docs/audit.md): one scope's export bundle
 * (one chain and its items), and for the whole-log audit the leaves in order
 * with their items, the items that have no leaf, and the scopes' recorded heads. Everything is
 * answered as stored, tampered or not: the verifier is what judges it.
 */

export const BUNDLE_FORMAT = 'vigil-audit-bundle/1';

/** How a service names what its chains link, e.g. `session`/`event`/`events`: the scope of a chain, one item, its items. */
export interface AuditWalkNames {
  scope: string;
  item: string;
  items: string;
}

export interface AuditWalkLoaders {
  /** One scope's recorded head and its stored items in seq order (ties by id) as their canonical chain texts, from one snapshot; undefined when the scope is unknown. */
  scope(scopeId: string): Promise<{ head: { seq: number; hash: string | null }; items: { id: string; text: string }[] } | undefined>;
  /**
   * The canonical chain texts of the stored items among `ids`, and the service's other leaves it
   * stores the data of (observe's writer leaves: their data as text).
   */
  texts(ids: string[]): Promise<Map<string, string>>;
  /** The credential recorded as each stored item's writer (null: not recorded); a service that records none leaves it out. */
  writers?(ids: string[]): Promise<Map<string, string | null>>;
  /** The signed leaves that account for changed items of the scope (observe's erasure leaves): each leaf's index, data and the log key's signature over it. */
  erasures?(scopeId: string): Promise<{ leafIndex: number; body: string; signature: string }[]>;
}

/** Where the items and the scopes' heads are stored, e.g. `events.session_id`, `sessions.last_seq`/`last_hash`. */
export interface AuditWalkTables {
  /** The items' table (its `id` is a leaf's item id, `seq` the place in the chain) and the column naming their scope. */
  items: string;
  itemScope: string;
  /** The scopes' table (by `id`) and the columns of its recorded head. */
  scopes: string;
  headSeq: string;
  headHash: string;
}

export interface AuditWalkRouteOptions<Schema extends AuditLogTables & AdminChangeTables> {
  log: AuditLog<Schema>;
  db: Kysely<Schema>;
  tables: AuditWalkTables;
  errors: ErrorFactory<'auditTreeSize' | 'auditLogIncomplete'>;
  /** The service's error for an unknown scope (404). */
  scopeNotFound(): Error;
  scopeIdSchema: z.ZodType<string>;
  clock: Clock;
  names: AuditWalkNames;
  loaders: AuditWalkLoaders;
  /** The service's scope that reads the log. */
  readScope: RouteScope;
  /** The names of the operations that differ by service (what they list is named after the service's items). */
  operationIds: { unlogged: string; heads: string };
}

const hex = auditHashSchema;
const treeSize = auditTreeSizeQuery;
const pageLimit = z.coerce.number().int().min(1).max(1000).default(1000);

/** The canonical texts of the stored change rows among `ids` (changeText). */
async function changeTexts<Schema extends AdminChangeTables>(db: Kysely<Schema>, ids: readonly string[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  if (ids.length === 0) return found;
  const rows = await tablesOf<AdminChangeTables, Schema>(db)
    .selectFrom('admin_changes')
    .selectAll()
    .where('id', 'in', [...ids])
    .execute();
  for (const row of rows) found.set(row.id, changeText(row));
  return found;
}

/**
 * GET /api/audit/export, /api/audit/leaves, /api/audit/unlogged and /api/audit/heads of a
 * service's log, its fields named after what it chains (`sessionId`, `events`; `requestId`,
 * `entries`).
 */
export function registerAuditWalkRoutes<Schema extends AuditLogTables & AdminChangeTables>(app: ZodApp, options: AuditWalkRouteOptions<Schema>): void {
  const { log, db, tables, errors, names, loaders, clock, readScope, operationIds } = options;
  const checkpointSchema = auditCheckpointSchema(log.name);
  const scopeId = `${names.scope}Id`;
  const itemId = `${names.item}Id`;
  const scopes = `${names.scope}s`;

  app.get(
    '/api/audit/export',
    {
      config: { scope: readScope },
      schema: {
        operationId: 'exportAuditBundle',
        errorStatuses: [404, AUDIT_LOG_INCOMPLETE_STATUS],
        summary: `A ${names.scope}'s self-contained audit bundle (verify it with \`vigil verify\`)`,
        description: `Every stored ${names.item} of the ${names.scope} as the canonical text its chain hash is computed over, in seq order, with the recorded head, each ${names.item}'s leaf index and inclusion proof to a signed checkpoint (signed now when the latest one does not cover every leaf of the ${names.scope}), the key that signed it and, with \`since\`, a consistency proof from that tree size. Format \`vigil-audit-bundle/1\` (docs/audit.md).`,
        tags: ['audit'],
        querystring: z.object({ [scopeId]: options.scopeIdSchema, since: treeSize.optional() }),
        response: {
          200: z.object({
            format: z.literal(BUNDLE_FORMAT),
            log: z.string(),
            [scopeId]: z.string(),
            head: z.object({ seq: z.number().int(), hash: z.string().nullable() }),
            [names.items]: z.array(z.string()).describe(`RFC 8785 canonical JSON of each ${names.item}'s chain object; its SHA-256 is the ${names.item} hash`),
            leaves: z.array(z.object({ index: z.number().int(), proof: z.array(hex) }).nullable()),
            checkpoint: checkpointSchema,
            publicKey: z.string().describe('Base64 of the raw Ed25519 key that signed the checkpoint'),
            certificates: z
              .array(
                z.object({
                  publicKey: z.string(),
                  leafIndex: z.number().int(),
                  body: z.string(),
                  signature: z.string(),
                  proof: z.array(hex),
                }),
              )
              .describe(
                "Every key rotation the checkpoint's log records: the new key, its certificate signed by the key it replaced (its key-rotation leaf's data) and that leaf's inclusion proof, so that a verifier holding only an older key can trust the key that signed the checkpoint",
              ),
            erasures: z
              .array(z.object({ leafIndex: z.number().int(), body: z.string(), signature: z.string(), proof: z.array(hex) }))
              .describe(
                `The signed erasure leaves covering ${names.items} of the ${names.scope} whose content was erased (docs/guide/erasure.md): each leaf's data, the log key's signature over it and its inclusion proof`,
              ),
            consistency: z.object({ from: z.number().int(), to: z.number().int(), proof: z.array(hex) }).optional(),
            heads: z
              .object({
                treeSize: z.number().int(),
                leafIndex: z.number().int(),
                leaf: z.string(),
                proof: z.array(hex),
                bucket: z.number().int(),
                entries: z.array(z.string()),
                path: z.array(hex),
              })
              .optional()
              .describe(
                `The ${names.scope}'s head as committed at tree size \`since\` (else the checkpoint's): the heads leaf ending that tree, its inclusion proof there, the ${names.scope}'s bucket of the map whole and the bucket's path to the map root (docs/audit.md, the heads map); absent when that tree does not end with a heads leaf`,
              ),
            tombstones: z
              .array(z.object({ leafIndex: z.number().int(), body: z.string(), signature: z.string(), proof: z.array(hex) }))
              .optional()
              .describe(`The ${names.scope}'s tombstones after \`heads\`, with their inclusion proofs in the checkpoint`),
            exportedAt: z.string(),
          }),
        },
      },
    },
    async (request, reply) =>
      provingFromLog(errors, async () => {
        const query = request.query as Record<string, unknown>;
        const id = query[scopeId] as string;
        const since = query.since as number | undefined;
        const stored = await loaders.scope(id);
        const { head, items } = stored ?? { head: { seq: -1, hash: null }, items: [] };
        const leaves = await log.leavesOf(items.map((item) => item.id));
        const erasures = (await loaders.erasures?.(id)) ?? [];
        let lastLeaf = -1;
        for (const leaf of leaves.values()) lastLeaf = Math.max(lastLeaf, leaf.index);
        for (const erasure of erasures) lastLeaf = Math.max(lastLeaf, erasure.leafIndex);
        // The scope's tombstones since `since`: a removal the bundle must show, so its checkpoint covers them too.
        const tombstoneRows = await tablesOf<AuditLogTables, Schema>(db)
          .selectFrom('audit_log_leaves as l')
          .innerJoin('audit_tombstones as t', 't.leaf_idx', 'l.idx')
          .select(['l.idx', 't.body', 't.signature'])
          .where('l.scope_id', '=', id)
          .where('l.idx', '>=', since ?? 0)
          .orderBy('l.idx')
          .execute();
        for (const row of tombstoneRows) lastLeaf = Math.max(lastLeaf, Number(row.idx));
        let checkpoint = await log.findCheckpoint();
        if (checkpoint === undefined || checkpoint.treeSize <= lastLeaf) checkpoint = await log.checkpoint();
        if (since !== undefined && since > checkpoint.treeSize) throw errors('auditTreeSize');
        const boundary = since ?? checkpoint.treeSize;
        const committed = boundary === 0 ? undefined : await headProofAt(db, boundary - 1, id);
        // Asked since a saved checkpoint, a scope with no row is answered with the map's bucket: it proves the scope had no items then, or that they are gone.
        if (stored === undefined && (since === undefined || committed === undefined)) throw options.scopeNotFound();
        const heads =
          committed === undefined
            ? undefined
            : { treeSize: boundary, ...committed, proof: (await log.inclusionPath(boundary - 1, boundary)).map((node) => node.toString('hex')) };
        const after = tombstoneRows.filter((row) => Number(row.idx) >= boundary && Number(row.idx) < checkpoint.treeSize);
        const tombstoneProofs = await log.inclusionPaths(
          after.map((row) => Number(row.idx)),
          checkpoint.treeSize,
        );
        const tombstones = after.map((row, i) => ({
          leafIndex: Number(row.idx),
          body: row.body,
          signature: row.signature,
          proof: tombstoneProofs[i]!.map((node) => node.toString('hex')),
        }));
        const indices = items.flatMap((item) => (leaves.has(item.id) ? [leaves.get(item.id)!.index] : []));
        const proofs = await log.inclusionPaths(indices, checkpoint.treeSize);
        let next = 0;
        const bundleLeaves = items.map((item) => {
          const leaf = leaves.get(item.id);
          return leaf === undefined ? null : { index: leaf.index, proof: proofs[next++]!.map((hash) => hash.toString('hex')) };
        });
        const keys = await log.keys();
        const signer = keys.find((key) => key.keyId === checkpoint.keyId);
        // Rotations the checkpoint covers, each with its leaf's proof: what lets an older pinned key reach its signer offline.
        const certified = keys.flatMap((key) =>
          key.certificate === null || key.certificate.leafIndex >= checkpoint.treeSize ? [] : [{ publicKey: key.publicKey, ...key.certificate }],
        );
        const certificateProofs = await log.inclusionPaths(
          certified.map((key) => key.leafIndex),
          checkpoint.treeSize,
        );
        const erasureProofs = await log.inclusionPaths(
          erasures.map((erasure) => erasure.leafIndex),
          checkpoint.treeSize,
        );
        const consistency =
          since === undefined
            ? undefined
            : { from: since, to: checkpoint.treeSize, proof: (await log.consistencyPath(since, checkpoint.treeSize)).map((hash) => hash.toString('hex')) };
        const bundle = {
          format: BUNDLE_FORMAT,
          log: log.name,
          [scopeId]: id,
          head,
          [names.items]: items.map((item) => item.text),
          leaves: bundleLeaves,
          checkpoint,
          publicKey: signer?.publicKey ?? '',
          certificates: certified.map((key, i) => ({ ...key, proof: certificateProofs[i]!.map((hash) => hash.toString('hex')) })),
          erasures: erasures.map((erasure, i) => ({ ...erasure, proof: erasureProofs[i]!.map((hash) => hash.toString('hex')) })),
          ...(consistency === undefined ? {} : { consistency }),
          ...(heads === undefined ? {} : { heads }),
          ...(tombstones.length === 0 ? {} : { tombstones }),
          exportedAt: toIso(clock.now()),
        };
        return sendJsonText(reply, JSON.stringify(bundle));
      }),
  );

  app.get(
    '/api/audit/leaves',
    {
      config: { scope: readScope },
      schema: {
        operationId: 'listAuditLeaves',
        summary: `The audit log's leaves from an index, in order, with their ${names.items}`,
        description: `An index range of the log (at most \`limit\`), each leaf with its ${names.scope}, its ${names.item} as the canonical text its hash is computed over (null when the ${names.item} row is gone) and, for a tombstone leaf (chains deleted), its signed body. A leaf without a ${names.scope} and tombstone logs an administrative change (but a key-rotation leaf, which \`GET /api/audit/public-key\` lists as a key's certificate): \`change\` is its row's canonical text (null when the row is gone), whose SHA-256 is the leaf's data. \`treeSize\` is the log's size now.`,
        tags: ['audit'],
        querystring: z.object({ from: treeSize.default(0), limit: pageLimit }),
        response: {
          200: z.object({
            treeSize: z.number().int(),
            leaves: z.array(
              z.object({
                index: z.number().int(),
                leafHash: z.string(),
                [scopeId]: z.string().nullable(),
                [itemId]: z.string().nullable(),
                [names.item]: z.string().nullable(),
                kind: z
                  .string()
                  .nullable()
                  .describe(
                    `What the leaf logs, as stored with it: \`${names.item}\`, \`tombstone\`, \`key-rotation\`, \`change\`, or another record the service logs`,
                  ),
                tombstone: z.object({ body: z.string(), signature: z.string() }).nullable(),
                change: z.string().nullable().optional().describe('On a change leaf: the change row as canonical JSON; null when the row is gone'),
                heads: z.string().optional().describe("On a heads leaf (the last leaf of a checkpoint's tree): its data, the map of heads' root it commits"),
                writtenBy: z
                  .string()
                  .nullable()
                  .optional()
                  .describe(`The credential recorded as the ${names.item}'s writer, where the service records one (null: not recorded)`),
              }),
            ),
          }),
        },
      },
    },
    async (request, reply) => {
      const { from, limit } = request.query;
      const [size, stored, keys, headsLeaves] = await Promise.all([log.size(), log.leaves(from, limit), log.keys(), headsLeavesIn(db, from, limit)]);
      // A leaf's kind says what it logs; the key-rotation leaves are also known by the certificates, a
      // change leaf by its row (its item id). A change row is answered for a leaf of another kind too,
      // so that a verifier sees the kind does not match what the leaf covers.
      const certificates = new Set(keys.flatMap((key) => (key.certificate === null ? [] : [key.certificate.leafIndex])));
      const mayBeChange = (leaf: (typeof stored)[number]) =>
        leaf.tombstone === null && !certificates.has(leaf.index) && (leaf.scopeId === null || leaf.kind === CHANGE_LEAF);
      const ids = stored.filter((leaf) => leaf.tombstone === null).map((leaf) => leaf.itemId);
      const [texts, changes, writers] = await Promise.all([
        ids.length === 0 ? new Map<string, string>() : loaders.texts(ids),
        changeTexts(
          db,
          stored.filter(mayBeChange).map((leaf) => leaf.itemId),
        ),
        ids.length === 0 || loaders.writers === undefined ? undefined : loaders.writers(ids),
      ]);
      const isChange = (leaf: (typeof stored)[number]) => mayBeChange(leaf) && (leaf.kind === CHANGE_LEAF || changes.has(leaf.itemId));
      const leaves = stored.map((leaf) => ({
        index: leaf.index,
        leafHash: leaf.leafHash,
        [scopeId]: leaf.scopeId,
        [itemId]: leaf.tombstone === null ? leaf.itemId : null,
        [names.item]: leaf.tombstone === null && !isChange(leaf) ? (texts.get(leaf.itemId) ?? null) : null,
        kind: leaf.kind,
        tombstone: leaf.tombstone,
        ...(isChange(leaf) && { change: changes.get(leaf.itemId) ?? null }),
        ...(headsLeaves.has(leaf.index) && { heads: headsLeaves.get(leaf.index)! }),
        ...(writers === undefined ? {} : { writtenBy: writers.get(leaf.itemId) ?? null }),
      }));
      return sendJsonText(reply, JSON.stringify({ treeSize: size, leaves }));
    },
  );

  app.get(
    '/api/audit/unlogged',
    {
      config: { scope: readScope },
      schema: {
        operationId: operationIds.unlogged,
        summary: `Stored ${names.items} that have no leaf in the audit log`,
        description: `${names.items[0]!.toUpperCase()}${names.items.slice(1)} written outside the service's write path (every ${names.item} it stores gets its leaf in the same transaction). Paged by ${names.item} id; \`nextCursor\` is null on the last page. Scans the ${names.items} table.`,
        tags: ['audit'],
        querystring: z.object({ cursor: z.string().optional(), limit: pageLimit }),
        response: {
          200: z.object({
            [names.items]: z.array(z.object({ [scopeId]: z.string(), seq: z.number().int(), [itemId]: z.string() })),
            nextCursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request, reply) => {
      const { cursor, limit } = request.query;
      // Every item the service writes gets its leaf in the same transaction: one without was written around it.
      const { rows } = await sql<{ id: string; scope_id: string; seq: number }>`
        select e.id, ${sql.ref(`e.${tables.itemScope}`)} as scope_id, e.seq
        from ${sql.table(tables.items)} e left join audit_log_leaves l on l.item_id = e.id
        where l.idx is null ${cursor === undefined ? sql`` : sql`and e.id > ${cursor}`}
        order by e.id limit ${limit}`.execute(db);
      return sendJsonText(
        reply,
        JSON.stringify({
          [names.items]: rows.map((row) => ({ [scopeId]: row.scope_id, seq: Number(row.seq), [itemId]: row.id })),
          nextCursor: rows.length === limit ? rows[rows.length - 1]!.id : null,
        }),
      );
    },
  );

  app.get(
    '/api/audit/heads',
    {
      config: { scope: readScope },
      schema: {
        operationId: operationIds.heads,
        summary: `Every ${names.scope}'s recorded chain head`,
        description: `${names.scope[0]!.toUpperCase()}${names.scope.slice(1)}s by id after \`after\` (keyset pages); \`headSeq\` is −1 and \`headHash\` null for a ${names.scope} without ${names.items}. \`nextCursor\` is null on the last page.`,
        tags: ['audit'],
        querystring: z.object({ after: z.string().optional(), limit: pageLimit }),
        response: {
          200: z.object({
            [scopes]: z.array(z.object({ [scopeId]: z.string(), headSeq: z.number().int(), headHash: z.string().nullable() })),
            nextCursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request, reply) => {
      const { after, limit } = request.query;
      const { rows } = await sql<{ id: string; head_seq: number; head_hash: string | null }>`
        select id, ${sql.ref(tables.headSeq)} as head_seq, ${sql.ref(tables.headHash)} as head_hash
        from ${sql.table(tables.scopes)} ${after === undefined ? sql`` : sql`where id > ${after}`}
        order by id limit ${limit}`.execute(db);
      return sendJsonText(
        reply,
        JSON.stringify({
          [scopes]: rows.map((row) => ({ [scopeId]: row.id, headSeq: Number(row.head_seq), headHash: row.head_hash })),
          nextCursor: rows.length === limit ? rows[rows.length - 1]!.id : null,
        }),
      );
    },
  );

  app.get(
    '/api/audit/unlogged-changes',
    {
      config: { scope: readScope },
      schema: {
        operationId: 'listUnloggedChanges',
        summary: 'Stored change-log rows that have no leaf in the audit log',
        description:
          'Administrative changes written outside the service (every change it records gets its leaf in the same transaction). Paged by change id; `nextCursor` is null on the last page. Scans the change log.',
        tags: ['audit'],
        querystring: z.object({ cursor: z.string().optional(), limit: pageLimit }),
        response: {
          200: z.object({
            changes: z.array(z.object({ changeId: z.string(), resource: z.string(), resourceId: z.string().nullable(), action: z.string() })),
            nextCursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request, reply) => {
      const { cursor, limit } = request.query;
      const { rows } = await sql<{ id: string; resource: string; resource_id: string | null; action: string }>`
        select c.id, c.resource, c.resource_id, c.action
        from admin_changes c left join audit_log_leaves l on l.item_id = c.id
        where l.idx is null ${cursor === undefined ? sql`` : sql`and c.id > ${cursor}`}
        order by c.id limit ${limit}`.execute(db);
      return sendJsonText(
        reply,
        JSON.stringify({
          changes: rows.map((row) => ({ changeId: row.id, resource: row.resource, resourceId: row.resource_id, action: row.action })),
          nextCursor: rows.length === limit ? rows[rows.length - 1]!.id : null,
        }),
      );
    },
  );
}
