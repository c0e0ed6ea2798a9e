import { countScopeLeaves, readSnapshot } from '@vigil/platform';
import type { Kysely } from 'kysely';
import {
  ChainVerifier,
  erasureCovers,
  firstWriterMismatch,
  type ChainHead,
  type ChainVerdict,
  forEachSessionEventPage,
  linksJson,
  leafOfRow,
  type LoggedChainRow,
  sessionLoggedRowsQuery,
  storedChainText,
  storedChainTextMatches,
  type StoredLink,
  toLink,
} from '../events/index.ts';
import { OBSERVE_LOG } from '../audit-log/index.ts';
import type { ObserveContext } from '../context.ts';
import type { ObserveSchema } from '../schema.ts';
import type { SessionRow } from '../events/index.ts';
import { VerifiedSessions } from './verified.ts';

/** What reads a session's events: the database and the sealer that opens their content (encryption/). */
export type EventReader = Pick<ObserveContext, 'database' | 'sealer'>;

export interface Timeline {
  session: SessionRow;
  rows: LoggedChainRow[];
  /** The rows as chain links, in the same order (ChainVerifier.add's: equal to the rows' fields). */
  links: StoredLink[];
  verdict: ChainVerdict;
}

export interface SessionChain {
  session: SessionRow;
  verdict: ChainVerdict;
}

/** Events read per page of a verification. */
const VERIFY_PAGE = 1000;

/**
 * 24 Mi characters: some 18,000 events of 450 characters of stored text with their timelines, or
 * 50,000 without; sessions of up to 4 Mi characters (some 9,000 events) each.
 */
const verifiedSessions = new VerifiedSessions(24 * 1024 * 1024, 4 * 1024 * 1024);

/** Forgets what was verified of these sessions (an erasure: no memo keeps erased content). */
export function forgetVerifiedSessions(sessionIds: Iterable<string>): void {
  for (const id of sessionIds) verifiedSessions.forget(id);
}

export function chainHeadOf(session: Pick<SessionRow, 'last_seq' | 'last_hash'>): ChainHead {
  return { lastSeq: session.last_seq, lastHash: session.last_hash };
}

function sessionRow(db: Kysely<ObserveSchema>, id: string): Promise<SessionRow | undefined> {
  return db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst();
}

/** What both reads of a session's chain start from: its leaves in the log, its row and head, and what was verified at that head. */
async function openChain(db: Parameters<typeof sessionRow>[0], sessionId: string) {
  // Counted first: an event committed after it (with its leaf) only lengthens the chain read next.
  const logged = await countScopeLeaves(db, sessionId);
  const session = await sessionRow(db, sessionId);
  if (!session) return undefined;
  const head = chainHeadOf(session);
  return { logged, session, head, known: verifiedSessions.recall(sessionId, head) };
}

/**
 * A session's row and every stored event of it in timeline order, read from one snapshot (so an
 * event appended meanwhile is in both or in neither), with the chain verified over all of them in
 * seq order. When the rows stored now are byte for byte those of a timeline read before at the
 * same head (the database compares them: sessions/verified.ts), that timeline and its verdict are
 * the answer; otherwise the rows are read and verified. Undefined when there is no such session.
 */
export async function sessionTimeline({ database, sealer }: EventReader, sessionId: string): Promise<Timeline | undefined> {
  return readSnapshot(database, async (db) => {
    const opened = await openChain(db, sessionId);
    if (!opened) return undefined;
    const { logged, session, head, known } = opened;
    // The session's partition only (events/partitions.ts); the verdict is held to the log's leaf count all the same.
    if (known?.timeline !== undefined && (await storedChainTextMatches(db, database.dialect, sessionId, known.storedText, session.session_start))) {
      return { session, ...known.timeline, verdict: await heldToTheLog(db, sessionId, known.verdict, logged) };
    }
    // The memo compares the text as stored (sealed or not); the chain and the timeline read it opened.
    const stored = await sessionLoggedRowsQuery(db, sessionId, session.session_start).execute();
    const rows = await sealer.open(stored);
    const verifier = new ChainVerifier(head);
    const links = rows.map((row) => verifier.add(toLink(row), leafOfRow(row)));
    const verdict = verifier.finish(await erasureCovers(db, OBSERVE_LOG, verifier.erasuresNamed()));
    const storedText = storedChainText(stored);
    if (storedText !== null) verifiedSessions.remember(sessionId, { head, storedText, verdict, timeline: { rows, links } });
    return { session, rows, links, verdict: await heldToTheLog(db, sessionId, verdict, logged) };
  });
}

const bodyOfTimeline = new WeakMap<readonly StoredLink[], Buffer>();

/**
 * The timeline response, `{events, chainValid, brokenAt}`, as UTF-8 JSON. A timeline's links array
 * is built once per full read, with its verdict, and handed back as is while the memo confirms it:
 * the body is kept with the array.
 */
export function timelineBody({ links, verdict }: Pick<Timeline, 'links' | 'verdict'>): Buffer {
  let body = bodyOfTimeline.get(links);
  if (body === undefined) {
    body = Buffer.from(`{"events":${linksJson(links)},"chainValid":${verdict.valid},"brokenAt":${JSON.stringify(verdict.brokenAt)}}`);
    bodyOfTimeline.set(links, body);
  }
  return body;
}

/**
 * The verdict over every stored event of a session, computed from the rows now: the remembered
 * one when the rows stored now are byte for byte those it was computed from (as for the timeline),
 * else the events are read in pages, in index order, from one snapshot with the session's row, and
 * only their ids and hashes (and, for a session small enough to remember, their stored text) are
 * kept. Undefined when there is no such session.
 */
export async function verifySessionChain({ database, sealer }: EventReader, sessionId: string): Promise<SessionChain | undefined> {
  return readSnapshot(database, async (db) => {
    const opened = await openChain(db, sessionId);
    if (!opened) return undefined;
    const { logged, session, head, known } = opened;
    if (known !== undefined && (await storedChainTextMatches(db, database.dialect, sessionId, known.storedText)))
      return { session, verdict: await heldToTheLog(db, sessionId, known.verdict, logged) };
    const verifier = new ChainVerifier(head);
    let texts: string[] | null = [];
    let chars = 0;
    await forEachSessionEventPage(db, sessionId, VERIFY_PAGE, async (rows) => {
      for (const row of await sealer.open(rows)) verifier.add(toLink(row), leafOfRow(row));
      if (texts === null) return;
      const text = storedChainText(rows);
      chars += text?.length ?? 0;
      if (text === null || chars > verifiedSessions.maxSessionChars) texts = null;
      else texts.push(text);
    });
    const verdict = verifier.finish(await erasureCovers(db, OBSERVE_LOG, verifier.erasuresNamed()));
    if (texts !== null) verifiedSessions.remember(sessionId, { head, storedText: texts.join(''), verdict });
    return { session, verdict: await heldToTheLog(db, sessionId, verdict, logged) };
  });
}

/**
 * A chain that verifies against its recorded head, held to the audit log — the one verdict every
 * answer gives (the session's verify, its timeline's and replay's `chainValid`): when the log has
 * more leaves of the session than the chain has events, events past the head were deleted and the
 * head rewritten to hide it (the chain alone cannot tell); and each event's recorded writer must be
 * the one its writer leaf names (`written_by` is outside the chain hash).
 */
async function heldToTheLog(db: Kysely<ObserveSchema>, sessionId: string, verdict: ChainVerdict, logged: number): Promise<ChainVerdict> {
  if (!verdict.valid) return verdict;
  if (logged > verdict.eventCount) {
    const seq = verdict.eventCount;
    return {
      ...verdict,
      valid: false,
      brokenAt: {
        seq,
        eventId: null,
        reason: `the audit log holds ${logged} events of this session but its chain ${seq === 0 ? 'has none' : `ends at seq ${seq - 1}`}: the events from seq ${seq} on were deleted and the session head rewritten`,
      },
    };
  }
  const writer = await firstWriterMismatch(db, OBSERVE_LOG, sessionId);
  return writer === null ? verdict : { ...verdict, valid: false, brokenAt: writer };
}
