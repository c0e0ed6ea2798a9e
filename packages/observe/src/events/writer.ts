// Who wrote an event (docs/audit.md#who-wrote-an-event). The credential is stored in the event's
// `written_by` column, outside its chain hash (whose recipe is fixed), and put under the evidence
// by a writer leaf of the audit log: after a committed batch's event leaves, one leaf per writer
// whose data is the canonical JSON naming the writer and the hashes of the events it wrote (never
// 32 bytes long, so it cannot pass for an event's leaf).
import { hashHex, leafHash } from '@vigil/platform';
import { sql, type Kysely } from 'kysely';
import type { ObserveSchema } from '../schema.ts';
import type { ChainBreak } from './chain.ts';
import { parseWriterLeaf } from './writer-leaf.ts';
import { writerLeafText } from './writer-leaf-store.ts';
import { writerOfStored } from './stored-writer.ts';

export { writerLeafBody } from './writer-leaf.ts';

/**
 * `key:<API key id>`, `webhook:approval_gate` or `webhook:form_service` (the source's signature:
 * the gate's forwarding), `service_token` (the internal route the gate reports breaches to),
 * `server` (verdicts and alert events the service writes itself) or `none` (AUTH_DISABLED).
 */
export type EventWriter = `key:${string}` | 'webhook:approval_gate' | 'webhook:form_service' | 'service_token' | 'server' | 'none';

export const SERVER_WRITER: EventWriter = 'server';

/** The writer of a request authenticated by an API key, or by nothing when authentication is disabled. */
export function keyWriter(key: { id: string } | null): EventWriter {
  return key === null ? 'none' : `key:${key.id}`;
}

const WRITER_LEAVES_PER_QUERY = 500;

/**
 * The first event of a session whose `written_by` differs from what the audit log's writer leaves
 * record, as a chain break, or null. An event's writer leaf is the first writer leaf after its own
 * leaf (a batch's leaves are contiguous: its events', then its writers'), and must name the
 * event's hash: an event with a writer must be named by it with that writer; an event without one
 * (stored before writers were recorded) must not be named. Each writer leaf's stored body must be
 * its leaf's data.
 */
export async function firstWriterMismatch(db: Kysely<ObserveSchema>, log: string, sessionId: string): Promise<ChainBreak | null> {
  const rows = await db
    .selectFrom('events as e')
    .leftJoin('audit_log_leaves as l', 'l.item_id', 'e.id')
    .select(['e.id', 'e.seq', 'e.hash', 'e.written_by'])
    .select(sql<number | string | null>`(select min(w.leaf_idx) from audit_writer_leaves w where w.leaf_idx > l.idx)`.as('writer_idx'))
    .where('e.session_id', '=', sessionId)
    .orderBy('e.seq')
    .execute();
  const indices = [...new Set(rows.flatMap((row) => (row.writer_idx === null ? [] : [Number(row.writer_idx)])))];
  const leaves = new Map<number, { writtenBy: string; events: Set<string> } | string>();
  for (let i = 0; i < indices.length; i += WRITER_LEAVES_PER_QUERY) {
    const stored = await db
      .selectFrom('audit_writer_leaves as w')
      .leftJoin('audit_log_leaves as l', 'l.idx', 'w.leaf_idx')
      .select(['w.leaf_idx', 'w.body', 'l.leaf_hash'])
      .where('w.leaf_idx', 'in', indices.slice(i, i + WRITER_LEAVES_PER_QUERY))
      .execute();
    for (const leaf of stored) {
      const index = Number(leaf.leaf_idx);
      const body = writerLeafText(leaf.body, log);
      const parsed = parseWriterLeaf(body, log);
      const matches = leaf.leaf_hash !== null && hashHex(leaf.leaf_hash) === leafHash(Buffer.from(body, 'utf8')).toString('hex');
      leaves.set(
        index,
        !matches || parsed === undefined ? `writer leaf ${index} is not the body stored for it` : { ...parsed, events: new Set(parsed.events) },
      );
    }
  }
  for (const stored of rows) {
    const row = { ...stored, written_by: writerOfStored(stored.written_by) };
    const hash = hashHex(row.hash);
    const leaf = row.writer_idx === null ? undefined : leaves.get(Number(row.writer_idx));
    const at = (reason: string): ChainBreak => ({ seq: row.seq, eventId: row.id, reason });
    if (typeof leaf === 'string') return at(`event ${row.id}: ${leaf}`);
    const named = leaf !== undefined && leaf.events.has(hash);
    if (row.written_by === null) {
      if (named) return at(`event ${row.id} records no writer, but its writer leaf ${String(row.writer_idx)} names ${leaf.writtenBy}`);
    } else if (!named) {
      return at(`event ${row.id} records writer ${row.written_by}, but no writer leaf in the audit log names it`);
    } else if (leaf.writtenBy !== row.written_by) {
      return at(`event ${row.id} records writer ${row.written_by}, but its writer leaf ${String(row.writer_idx)} names ${leaf.writtenBy}`);
    }
  }
  return null;
}
