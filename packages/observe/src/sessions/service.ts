import { readSnapshot } from '@vigil/platform';
import type { Kysely } from 'kysely';
import {
  ChainVerifier,
  type ChainHead,
  type ChainVerdict,
  forEachSessionEventPage,
  type LoggedChainRow,
  sessionLoggedRowsQuery,
  type StoredLink,
  toLink,
} from '../events/index.ts';
import type { ObserveDatabase, ObserveSchema, SessionRow } from '../schema.ts';

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

export function chainHeadOf(session: Pick<SessionRow, 'last_seq' | 'last_hash'>): ChainHead {
  return { lastSeq: session.last_seq, lastHash: session.last_hash };
}

function sessionRow(db: Kysely<ObserveSchema>, id: string): Promise<SessionRow | undefined> {
  return db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * A session's row and every stored event of it in timeline order, read from one snapshot (so an
 * event appended meanwhile is in both or in neither), with the chain verified over all of them in
 * seq order. Undefined when there is no such session.
 */
export async function sessionTimeline(database: ObserveDatabase, sessionId: string): Promise<Timeline | undefined> {
  return readSnapshot(database, async (db) => {
    const session = await sessionRow(db, sessionId);
    if (!session) return undefined;
    const rows = await sessionLoggedRowsQuery(db, sessionId).execute();
    const verifier = new ChainVerifier(chainHeadOf(session));
    const links = rows.map((row) => verifier.add(toLink(row), row.leaf_hash));
    return { session, rows, links, verdict: verifier.finish() };
  });
}

/**
 * The verdict over every stored event of a session, computed from the rows now: the events are
 * read in pages, in index order, from one snapshot with the session's row, and only their ids and
 * hashes are kept. Undefined when there is no such session.
 */
export async function verifySessionChain(database: ObserveDatabase, sessionId: string): Promise<SessionChain | undefined> {
  return readSnapshot(database, async (db) => {
    const session = await sessionRow(db, sessionId);
    if (!session) return undefined;
    const verifier = new ChainVerifier(chainHeadOf(session));
    await forEachSessionEventPage(db, sessionId, VERIFY_PAGE, (rows) => {
      for (const row of rows) verifier.add(toLink(row), row.leaf_hash);
    });
    return { session, verdict: verifier.finish() };
  });
}
