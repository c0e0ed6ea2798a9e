// Crypto-shredding (docs/guide/erasure.md#crypto-shredding): events' content sealed under data keys
// that erasure destroys, so copies of the database taken before an erasure hold nothing readable.
import type { ObserveConfig } from '../config.ts';
import { parseSubjectPaths, subjectIdsOf } from '../erasure/index.ts';
import type { ObserveDatabase } from '../schema.ts';
import type { SubjectHasher } from '@vigil/platform';
import { EventSealer, keyOwner } from './sealer.ts';

export { encryptionMigrations } from './migrations.ts';
export { EventSealer } from './sealer.ts';
export type { EncryptionTables } from './tables.ts';

/**
 * The service's sealer: a data key per set of subjects an event names at SUBJECT_PATHS (by keyed
 * hash), per session for the others; checked against the stored keys (a wrong or missing key file
 * stops the start).
 */
export async function startEventSealer(config: ObserveConfig, database: ObserveDatabase, subjects: SubjectHasher): Promise<EventSealer> {
  const paths = parseSubjectPaths(config.subjects.paths);
  return EventSealer.start(config.encryptionKeyFile, database, ({ sessionId, payload, metadata }) =>
    keyOwner(
      subjectIdsOf(paths, payload, metadata).map((id) => subjects.hash(id)),
      sessionId,
    ),
  );
}
