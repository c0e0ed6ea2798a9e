// Migration 0019 with a frozen copy of what it ran of recall's code then (recall/text.ts's choice of
// the events that get a vector). The vector encoding it converted to is the kernel's (encodeVector),
// a storage format that never changes.
import { encodeVector, type DialectName, type MigrationDb } from '@vigil/platform';
import { sql } from 'kysely';

/** Rows converted per read. */
const PAGE = 500;

interface CompactionCounts {
  converted: number;
  dropped: number;
}

/**
 * Migration 0019_compact_embeddings, on both databases, in the migration's transaction: every
 * live vector stored as Float32 becomes int8 (encodeVector); an event's row loses its copy of the
 * event's text and metadata (results build them from the event); the vectors of events that are
 * no longer embedded (isEmbeddedEvent) or no longer stored are deleted.
 * Deleting moves `purged_seq` up to `last_seq`, so every in-memory index reloads. Space freed in
 * the file is left to the database to reuse (nothing is vacuumed here).
 */
export async function compactEmbeddings(db: MigrationDb, dialect: DialectName): Promise<CompactionCounts> {
  const counts: CompactionCounts = { converted: 0, dropped: 0 };
  for (const type of ['event', 'session'] as const) {
    let after = '';
    for (;;) {
      const rows = (await db
        .selectFrom('embeddings')
        .select(['source_id', 'dims', 'vector'])
        .where('source_type', '=', type)
        .where('source_id', '>', after)
        .where('deleted', '=', 0)
        .orderBy('source_id')
        .limit(PAGE)
        .execute()) as { source_id: string; dims: number; vector: Uint8Array }[];
      if (rows.length === 0) break;
      after = rows[rows.length - 1]!.source_id;
      const events = new Map<string, EmbeddedEventSource>();
      if (type === 'event') {
        const found = (await db
          .selectFrom('events')
          .select(['id', 'event_type', 'payload'])
          .where(
            'id',
            'in',
            rows.map((r) => r.source_id),
          )
          .execute()) as EmbeddedEventSource[];
        for (const event of found) events.set(event.id, event);
      }
      const dropped: string[] = [];
      const converted: { id: string; vector: Buffer }[] = [];
      for (const row of rows) {
        if (type === 'event') {
          const event = events.get(row.source_id);
          if (event === undefined || !isEmbeddedEvent(event.event_type, JSON.parse(event.payload) as Record<string, unknown>)) {
            dropped.push(row.source_id);
            continue;
          }
        }
        // Only Float32 vectors (4 bytes a dimension) are converted; a compact one is left as it is.
        if (row.vector.byteLength !== Number(row.dims) * 4) continue;
        converted.push({ id: row.source_id, vector: encodeVector(decodeFloatVector(row.vector)) });
      }
      if (converted.length > 0) {
        // One statement per page (a row at a time took PostgreSQL ~1 ms a vector).
        const blob = (vector: Buffer) => (dialect === 'postgres' ? sql`cast(${vector} as bytea)` : sql`${vector}`);
        const values = sql.join(converted.map((c) => sql`(${c.id}, ${blob(c.vector)})`));
        const text = type === 'event' ? sql`''` : sql.ref('embeddings.text');
        const metadata = type === 'event' ? sql`''` : sql.ref('embeddings.metadata');
        await sql`with v(source_id, vector) as (values ${values})
          update embeddings set vector = v.vector, text = ${text}, metadata = ${metadata}
          from v where embeddings.source_type = ${type} and embeddings.source_id = v.source_id`.execute(db);
        counts.converted += converted.length;
      }
      if (dropped.length > 0) {
        await db.deleteFrom('embeddings').where('source_type', '=', type).where('source_id', 'in', dropped).execute();
        counts.dropped += dropped.length;
      }
    }
  }
  if (counts.dropped > 0)
    await db
      .updateTable('embedding_meta')
      .set((eb) => ({ purged_seq: eb.ref('last_seq') }))
      .where('id', '=', 1)
      .execute();
  return counts;
}

/** What the compaction reads of an event. */
interface EmbeddedEventSource {
  id: string;
  event_type: string;
  payload: string;
}

/** A vector stored before 0019: Float32 little-endian. */
function decodeFloatVector(stored: Uint8Array): Float32Array {
  const view = new DataView(stored.buffer, stored.byteOffset, stored.byteLength);
  const vector = new Float32Array(stored.byteLength / 4);
  for (let i = 0; i < vector.length; i++) vector[i] = view.getFloat32(i * 4, true);
  return vector;
}

/** The event types whose events may get a vector (recall/text.ts then): 0005 queued their stored events, 0019 kept their vectors. */
export const EMBEDDED_EVENT_TYPES = [
  'tool_call',
  'tool_error',
  'llm_call',
  'llm_response',
  'session_ended',
  'approval_requested',
  'approval_granted',
  'approval_denied',
  'approval_expired',
  'alert_triggered',
  'custom',
  'eval_result',
] as const;
const embeddedEventTypes = new Set<string>(EMBEDDED_EVENT_TYPES);

const hasText = (value: unknown): boolean => typeof value === 'string' && value.trim().length > 0;

/**
 * Whether an event gets a vector (then its text, a label and the payload's words, is never
 * empty): a session_ended only with a summary, an llm_call only when its last message is the
 * user's, an llm_response only with a completion, an approval decision only with a reason.
 */
function isEmbeddedEvent(eventType: string, payload: Record<string, unknown>): boolean {
  if (!embeddedEventTypes.has(eventType)) return false;
  switch (eventType) {
    case 'session_ended':
      return hasText(payload.summary);
    case 'llm_call': {
      const messages = payload.messages;
      if (!Array.isArray(messages) || messages.length === 0) return false;
      const last = messages[messages.length - 1] as { role?: unknown } | string | null;
      return typeof last === 'string' || (last !== null && typeof last === 'object' && last.role === 'user');
    }
    case 'llm_response':
      return contentText(payload.completion).trim().length > 0;
    case 'approval_granted':
    case 'approval_denied':
    case 'approval_expired':
      return hasText(payload.reason);
    default:
      return true;
  }
}

/** Text of an LLM message's content: a string, or the text parts of a content array. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === 'string' ? part : typeof (part as { text?: unknown })?.text === 'string' ? (part as { text: string }).text : ''))
      .filter(Boolean)
      .join(' ');
  }
  return flatten(content);
}

/** A JSON value as text: strings as they are, objects as `key: value` pairs, arrays as comma lists, nesting bounded. */
function flatten(value: unknown, budget = 2000, depth = 0): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value.length > budget ? value.slice(0, budget) : value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (depth >= 4) return '';
  const parts: string[] = [];
  let used = 0;
  const push = (part: string): boolean => {
    if (part.length === 0) return true;
    parts.push(part);
    used += part.length + 2;
    return used < budget;
  };
  if (Array.isArray(value)) {
    for (const item of value) if (!push(flatten(item, budget - used, depth + 1))) break;
  } else if (typeof value === 'object') {
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      const text = flatten(item, budget - used, depth + 1);
      if (text.length > 0 && !push(`${key}: ${text}`)) break;
    }
  }
  return parts.join(', ');
}
