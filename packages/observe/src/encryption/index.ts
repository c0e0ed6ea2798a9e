// Crypto-shredding (docs/guide/erasure.md#crypto-shredding): events' content sealed under data keys
// that erasure destroys, kept in a key store apart from the events' database, so copies of that
// database taken before an erasure hold nothing readable.
import { defineFeature, type PeriodicJob } from '@vigil/platform';
import type { ObserveConfig } from '../config.ts';
import type { ObserveFeature } from '../context.ts';
import { parseSubjectPaths, subjectIdsOf } from '../erasure/index.ts';
import type { ObserveDatabase } from '../schema.ts';
import type { SubjectHasher } from '@vigil/platform';
import { openDataKeyStore, type DataKeyStore } from './key-store.ts';
import { EventSealer, keyOwner } from './sealer.ts';

export { encryptionMigrations } from './migrations.ts';
export { EventSealer } from './sealer.ts';
export type { DataKeyStore, StoredDataKey } from './key-store.ts';
export type { EncryptionTables } from './tables.ts';

/**
 * The service's sealer: a data key per set of subjects an event names at SUBJECT_PATHS (by keyed
 * hash), per session for the others, kept in `store` (default: the one DATA_KEY_STORE names);
 * checked against the events' database (a wrong or missing key file or key store stops the start).
 */
export async function startEventSealer(config: ObserveConfig, database: ObserveDatabase, subjects: SubjectHasher, store?: DataKeyStore): Promise<EventSealer> {
  const paths = parseSubjectPaths(config.subjects.paths);
  return EventSealer.start(
    config.encryptionKeyFile,
    database,
    async (keyFile) => store ?? openDataKeyStore(config.dataKeyStore, keyFile, config.database),
    ({ sessionId, payload, metadata }) =>
      keyOwner(
        subjectIdsOf(paths, payload, metadata).map((id) => subjects.hash(id)),
        sessionId,
      ),
  );
}

/** How often the destruction job looks for data keys an erasure committed and did not destroy. */
const DESTRUCTION_INTERVAL_MS = 10_000;

/** Resolves to the job that finishes destructions of data keys left by a process that died mid-erasure. */
export const encryptionFeature: ObserveFeature<PeriodicJob> = defineFeature('encryption', ({ context, job }) =>
  job({
    name: 'observe.data-key-destruction',
    intervalMs: DESTRUCTION_INTERVAL_MS,
    run: async () => {
      await context.sealer.finishDestructions(context.database.db);
    },
  }),
);
