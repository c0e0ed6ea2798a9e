// The subject index: in the creation's transaction, each new request's data subjects
// (GATE_SUBJECT_PATHS) by the keyed hash of their ids, so an erasure finds a subject's requests
// without reading every request. Computed in memory from the stored texts: one insert per group.
import type { SubjectHasher } from '@vigil/platform';
import type { SubjectIndexer } from '../requests/index.ts';
import type { RequestSubjectRow } from './tables.ts';

/** A path split into its root (`params` or `context`) and keys. */
export interface SubjectPath {
  root: 'params' | 'context';
  keys: string[];
}

export function parseSubjectPaths(paths: readonly string[]): SubjectPath[] {
  return paths.map((path) => {
    const [root, ...keys] = path.split('.');
    return { root: root as SubjectPath['root'], keys };
  });
}

/** The subject ids at the paths of a request's stored params and context (strings and numbers; arrays give each of their entries). */
export function subjectIdsOf(paths: readonly SubjectPath[], stored: { params: string; context: string }): string[] {
  const ids = new Set<string>();
  const parsed: Partial<Record<SubjectPath['root'], unknown>> = {};
  for (const { root, keys } of paths) {
    // Most requests name no subject: a text without the path's first key is not parsed.
    if (!stored[root].includes(JSON.stringify(keys[0]))) continue;
    let value = (parsed[root] ??= JSON.parse(stored[root]) as unknown);
    for (const key of keys) value = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined;
    for (const item of Array.isArray(value) ? value : [value]) {
      if ((typeof item === 'string' && item.length > 0) || typeof item === 'number') ids.add(String(item));
    }
  }
  return [...ids];
}

/** The indexer the requests feature calls with each group of new requests. */
export function subjectIndexer(paths: readonly SubjectPath[], hasher: SubjectHasher): SubjectIndexer {
  return async (trx, requests) => {
    const rows: RequestSubjectRow[] = [];
    for (const request of requests) for (const id of subjectIdsOf(paths, request)) rows.push({ subject_hash: hasher.hash(id), request_id: request.id });
    // 2 columns: 256 requests (a full group) naming several subjects each stay far below SQLite's parameter limit.
    if (rows.length > 0) await trx.insertInto('request_subjects').values(rows).execute();
  };
}
