// The map of heads' thread (HeadsThread, audit-heads-threaded.ts): a checkpoint's heads leaf drafted
// and committed on a SQLite connection of its own, so that reading back and rehashing the changed
// buckets leaves the thread that serves requests.
import { workerData } from 'node:worker_threads';
import { HEADS_LEAF } from './audit-heads-format.ts';
import { commitScopeHeads, prepareScopeHeads, type HeadMapCache, type HeadMapDraft, type ScopeHeadSource } from './audit-heads.ts';
import { appendLeaves, type AuditLogTables } from './audit-log.ts';
import { sqliteConnection, type SqliteFile } from './db.ts';
import { serveThreadRequests } from './threads.ts';

export interface HeadsThreadSetup {
  sqlite: SqliteFile;
  log: string;
  source: ScopeHeadSource;
}

/**
 * `prepare`: draft from what is committed, no lock taken; `commit`: take the write lock, bring the
 * draft up to the log's size, append the heads leaf. Answered with the tree size to sign (after a prepare, 0).
 */
export type HeadsStep = 'prepare' | 'commit';

const setup = workerData as HeadsThreadSetup;
/** A checkpoint reads a few thousand rows of the map's tables: 2 MiB of pages keep its B-trees' upper levels. */
const db = sqliteConnection<AuditLogTables>(setup.sqlite, 2);
/** The map as this thread's last commit left it. */
const cache: { current?: HeadMapCache } = {};
let draft: HeadMapDraft | undefined;
serveThreadRequests(async (step: HeadsStep): Promise<number> => {
  if (step === 'prepare') {
    draft = await prepareScopeHeads({ db, dialect: 'sqlite' }, setup.log, setup.source, cache);
    return 0;
  }
  const prepared = draft;
  draft = undefined;
  return commitScopeHeads(
    { db, dialect: 'sqlite' },
    setup.log,
    setup.source,
    (trx, data, itemId) => appendLeaves(trx, 'sqlite', [{ itemId, scopeId: null, kind: HEADS_LEAF, data }]),
    { cache, draft: prepared },
  );
});
