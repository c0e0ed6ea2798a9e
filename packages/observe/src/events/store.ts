import { fullTextMatch, hashHex, hashHexSql, toIso, type DialectName } from '@vigil/platform';
import { type Kysely, sql } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { EventRow } from './tables.ts';
import { chainText, type StoredLink } from './chain.ts';
import type { Event, ListEventsQuery } from './schemas.ts';
import { writerOfStored } from './stored-writer.ts';

/** An event as the API answers it: its chain link with payload and metadata parsed. */
export function toEvent(row: EventRow): Event {
  // Written out in the order eventJson writes the keys (an object rest of the link took V8's generic path, about 1 µs an event).
  const link = toLink(row);
  return {
    id: link.id,
    seq: link.seq,
    timestamp: link.timestamp,
    sessionId: link.sessionId,
    agentId: link.agentId,
    eventType: link.eventType,
    severity: link.severity as Event['severity'],
    payload: JSON.parse(link.payloadJson) as Record<string, unknown>,
    metadata: JSON.parse(link.metadataJson) as Record<string, unknown>,
    prevHash: link.prevHash,
    hash: link.hash,
    writtenBy: link.writtenBy,
  };
}

/** The columns a chain link commits to, plus its own hash and its writer (outside the hash, under its writer leaf: events/writer.ts). */
export const CHAIN_COLUMNS = [
  'id',
  'seq',
  'ts',
  'session_id',
  'agent_id',
  'event_type',
  'severity',
  'payload',
  'metadata',
  'prev_hash',
  'hash',
  'written_by',
] as const;
export type ChainRow = Pick<EventRow, (typeof CHAIN_COLUMNS)[number]>;
const EVENTS_CHAIN_COLUMNS = CHAIN_COLUMNS.map((column) => `events.${column}` as const);

/** A chain row with the audit-log leaf hash recorded for its event (null when the log has none). */
export type LoggedChainRow = ChainRow & { leaf_hash: Buffer | null };

export function toLink(row: ChainRow): StoredLink {
  return {
    id: row.id,
    seq: row.seq,
    timestamp: toIso(row.ts),
    sessionId: row.session_id,
    agentId: row.agent_id,
    eventType: row.event_type,
    severity: row.severity,
    payloadJson: row.payload,
    metadataJson: row.metadata,
    prevHash: row.prev_hash === null ? null : hashHex(row.prev_hash),
    hash: hashHex(row.hash),
    writtenBy: writerOfStored(row.written_by),
  };
}

/** The leaf hash (hex) a logged row read, null when the audit log has none for its event. */
export function leafOfRow(row: LoggedChainRow): string | null {
  return row.leaf_hash === null ? null : hashHex(row.leaf_hash);
}

/** The canonical text the row's chain hash is computed over, from its stored columns (docs/audit.md). */
export function chainTextOf(row: ChainRow): string {
  const link = toLink(row);
  return chainText(link, link.payloadJson, link.metadataJson);
}

const quote = JSON.stringify;

/**
 * The JSON of `toEvent(row)`, built from the stored JSON text without parsing it again: list and
 * timeline responses splice rows straight into the body.
 */
export function eventJson(row: ChainRow): string {
  return linkJson(toLink(row));
}

/** eventJson of the row a link was read from (a timeline has the links already, timestamps formatted). */
export function linkJson(link: StoredLink): string {
  return (
    `{"id":${quote(link.id)},"seq":${link.seq},"timestamp":"${link.timestamp}","sessionId":${quote(link.sessionId)}` +
    `,"agentId":${quote(link.agentId)},"eventType":${quote(link.eventType)},"severity":${quote(link.severity)}` +
    `,"payload":${link.payloadJson},"metadata":${link.metadataJson},"prevHash":${link.prevHash === null ? 'null' : quote(link.prevHash)}` +
    `,"hash":${quote(link.hash)},"writtenBy":${link.writtenBy === null ? 'null' : quote(link.writtenBy)}}`
  );
}

const jsonOfLink = new WeakMap<StoredLink, string>();

/**
 * linkJson, kept with the link object: a timeline serialises the links ChainVerifier.add hands
 * back, which are the same objects from one read to the next while the rows are unchanged.
 */
export function keptLinkJson(link: StoredLink): string {
  let json = jsonOfLink.get(link);
  if (json === undefined) {
    json = linkJson(link);
    jsonOfLink.set(link, json);
  }
  return json;
}

/** The JSON array of a timeline's links (keptLinkJson each). */
export function linksJson(links: readonly StoredLink[]): string {
  return `[${links.map(keptLinkJson).join(',')}]`;
}

export function eventsJson(rows: readonly ChainRow[]): string {
  return `[${rows.map(eventJson).join(',')}]`;
}

export async function findEvent(database: ObserveDatabase, id: string): Promise<EventRow | undefined> {
  return database.db.selectFrom('events').selectAll().where('id', '=', id).executeTakeFirst();
}

export interface EventPage {
  rows: EventRow[];
  total: number;
}

function onlyFilter(query: ListEventsQuery): 'none' | 'session' | 'other' {
  const { sessionId, agentId, eventType, severity, from, to, search } = query;
  const others = [agentId, eventType, severity, from, to, search].some((v) => v !== undefined);
  if (others) return 'other';
  return sessionId === undefined ? 'none' : 'session';
}

/**
 * One page of events plus the exact total. Totals of the two hottest shapes (no filter, one
 * session) come from the session counters kept in the ingest transaction, not a count scan.
 */
export async function listEvents(database: ObserveDatabase, query: ListEventsQuery): Promise<EventPage> {
  const { db, dialect } = database;
  let filtered = db.selectFrom('events');
  if (query.sessionId !== undefined) filtered = filtered.where('session_id', '=', query.sessionId);
  if (query.agentId !== undefined) filtered = filtered.where('agent_id', '=', query.agentId);
  if (query.eventType !== undefined) filtered = filtered.where('event_type', 'in', query.eventType);
  if (query.severity !== undefined) filtered = filtered.where('severity', 'in', query.severity);
  if (query.from !== undefined) filtered = filtered.where('ts', '>=', query.from);
  if (query.to !== undefined) filtered = filtered.where('ts', '<=', query.to);
  if (query.search !== undefined) filtered = filtered.where(fullTextMatch(dialect, 'events', 'payload', query.search));

  const tieBreak = query.sessionId !== undefined ? 'seq' : 'id';
  const rowsPromise = filtered.selectAll().orderBy('ts', query.order).orderBy(tieBreak, query.order).limit(query.limit).offset(query.offset).execute();

  const shape = onlyFilter(query);
  let totalPromise: Promise<number>;
  if (shape === 'none') {
    totalPromise = db
      .selectFrom('sessions')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('event_count'), eb.lit(0)).as('n'))
      .executeTakeFirstOrThrow()
      .then((r) => Number(r.n));
  } else if (shape === 'session') {
    totalPromise = db
      .selectFrom('sessions')
      .select('event_count')
      .where('id', '=', query.sessionId!)
      .executeTakeFirst()
      .then((r) => r?.event_count ?? 0);
  } else {
    totalPromise = filtered
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
      .then((r) => Number(r.n));
  }
  const [rows, total] = await Promise.all([rowsPromise, totalPromise]);
  return { rows, total };
}

/**
 * Every stored event of a session in timeline order (timestamp, then seq): the order of the
 * (session_id, ts, seq) index, so the database reads it without a sort. Any row carrying the
 * session's id is here, whether or not it is linked into the chain; given `sessionStart` (the
 * session row's session_start), only the rows carrying it, which on PostgreSQL reads the one
 * partition holding the session (events/partitions.ts), not every partition's index.
 */
export function sessionEventsQuery(db: Kysely<ObserveSchema>, sessionId: string, sessionStart?: number) {
  let query = db.selectFrom('events').where('session_id', '=', sessionId);
  if (sessionStart !== undefined) query = query.where('session_start', '=', sessionStart);
  return query.orderBy('ts', 'asc').orderBy('seq', 'asc');
}

/**
 * Every stored event of a session in timeline order, its chain columns with the audit-log leaf
 * recorded for it: the (session_id, ts, seq) index range joined to the leaves' unique item index,
 * one statement instead of a second lookup by id. `sessionStart` prunes to the session's partition
 * as for sessionEventsQuery; the verification of a chain (forEachSessionEventPage) passes none and
 * reads every partition, so a row whose session_start was edited cannot hide from it.
 */
export function sessionLoggedRowsQuery(db: Kysely<ObserveSchema>, sessionId: string, sessionStart?: number) {
  let query = db.selectFrom('events').leftJoin('audit_log_leaves', 'audit_log_leaves.item_id', 'events.id').where('events.session_id', '=', sessionId);
  if (sessionStart !== undefined) query = query.where('events.session_start', '=', sessionStart);
  return query.select(EVENTS_CHAIN_COLUMNS).select('audit_log_leaves.leaf_hash').orderBy('events.ts', 'asc').orderBy('events.seq', 'asc');
}

/**
 * The stored text of a session's chain: every byte the chain verdict and the timeline are computed
 * from (each row's chain columns, its audit-log leaf and its writer), rows in timeline order. A row is its
 * fields joined by U+001F, written as its length in UTF-8 bytes, a colon and that text; hashes are
 * written in hex (hashHex: a stored value that is not bytes gives text SQL's hex never does); a
 * null prevHash, leaf or writer is `-`, a present one `+` and its hex. Rows whose fields hold U+001F or
 * are empty (canonical JSON, ids and hashes never are) give no text (null). So a text splits back into
 * exactly the rows and fields it was built from: the lengths delimit the rows, and a stored row
 * giving the same row text has no separator inside a field (it would have one more than the 12
 * between them) nor a null (written empty). `storedChainText` builds it from rows read;
 * `storedChainTextMatches` has the database build it from the rows stored now and compare.
 */
const FIELD_SEPARATOR = '\u001f';

export function storedChainText(rows: readonly LoggedChainRow[]): string | null {
  const texts = new Array<string>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    const fields = [
      row.id,
      String(row.seq),
      String(row.ts),
      row.session_id,
      row.agent_id,
      row.event_type,
      row.severity,
      row.payload,
      row.metadata,
      row.prev_hash === null ? '-' : `+${hashHex(row.prev_hash)}`,
      hashHex(row.hash),
      row.leaf_hash === null ? '-' : `+${hashHex(row.leaf_hash)}`,
      row.written_by === null ? '-' : `+${row.written_by}`,
    ];
    if (fields.some((field) => field.length === 0 || field.includes(FIELD_SEPARATOR))) return null;
    const text = fields.join(FIELD_SEPARATOR);
    texts[i] = `${Buffer.byteLength(text)}:${text}`;
  }
  return texts.join('');
}

/** A row's text in SQL (both dialects: concat, octet_length, string_agg, hashHexSql), the fields in the same order. */
const storedRowSql = {
  sqlite: storedRowSqlOf('sqlite'),
  postgres: storedRowSqlOf('postgres'),
};

function storedRowSqlOf(dialect: DialectName) {
  const hex = (column: string) => hashHexSql(dialect, column);
  return sql`concat(${sql.join(
    [
      sql.ref('e.id'),
      sql`cast(e.seq as text)`,
      sql`cast(e.ts as text)`,
      sql.ref('e.session_id'),
      sql.ref('e.agent_id'),
      sql.ref('e.event_type'),
      sql.ref('e.severity'),
      sql.ref('e.payload'),
      sql.ref('e.metadata'),
      sql`coalesce('+' || ${hex('e.prev_hash')}, '-')`,
      hex('e.hash'),
      sql`coalesce('+' || ${hex('l.leaf_hash')}, '-')`,
      sql`coalesce('+' || e.written_by, '-')`,
    ],
    sql.raw(`, '${FIELD_SEPARATOR}', `),
  )})`;
}

/**
 * Whether the session's rows stored now give exactly `text` (storedChainText): the database reads
 * every row's chain columns and leaf and compares the whole text, so no row crosses into
 * JavaScript. Both sides write integers in decimal and measure UTF-8 (a PostgreSQL server in
 * another encoding never matches: every read is then a full one). Rows tied on (ts, seq), which
 * only a row written outside ingest can make, may come in another order than they were read in:
 * the texts then differ, which costs a full read, never a wrong answer.
 */
export async function storedChainTextMatches(
  db: Kysely<ObserveSchema>,
  dialect: DialectName,
  sessionId: string,
  text: string,
  sessionStart?: number,
): Promise<boolean> {
  const result = await sql<{ same: number | boolean | null }>`
    select string_agg(concat(octet_length(t), ':', t), '') = ${text} as same from (
      select ${storedRowSql[dialect]} as t
      from events e left join audit_log_leaves l on l.item_id = e.id
      where e.session_id = ${sessionId}${sessionStart === undefined ? sql`` : sql` and e.session_start = ${sessionStart}`}
      order by e.ts, e.seq
    ) as stored`.execute(db);
  const same = result.rows[0]?.same;
  return same === 1 || same === true;
}

/**
 * Every stored event of a session (sessionLoggedRowsQuery) in timeline order, `pageSize` at a time:
 * keyset pages after the last (ts, seq, id), each one an index range on (session_id, ts, seq), so a
 * long session is never held at once and no page reads the ones before it again (ties on (ts, seq)
 * ordered and resumed by id).
 */
export async function forEachSessionEventPage(
  db: Kysely<ObserveSchema>,
  sessionId: string,
  pageSize: number,
  onPage: (rows: LoggedChainRow[]) => void | Promise<void>,
): Promise<void> {
  let last: LoggedChainRow | undefined;
  for (;;) {
    let query = sessionLoggedRowsQuery(db, sessionId).orderBy('events.id').limit(pageSize);
    if (last !== undefined) {
      const { ts, seq, id } = last;
      query = query.where((eb) =>
        eb.and([
          eb(eb.refTuple('events.ts', 'events.seq'), '>=', eb.tuple(ts, seq)),
          eb.or([eb(eb.refTuple('events.ts', 'events.seq'), '>', eb.tuple(ts, seq)), eb('events.id', '>', id)]),
        ]),
      );
    }
    const rows = await query.execute();
    await onPage(rows);
    if (rows.length < pageSize) return;
    last = rows[rows.length - 1];
  }
}
