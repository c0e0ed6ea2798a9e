// The subject index: in the ingest transaction, each event's data subjects (SUBJECT_PATHS) by the
// keyed hash of their ids, so an erasure finds a subject's events without reading every event.
import type { CommittingBatch } from '../events/index.ts';
import type { ObserveContext } from '../context.ts';
import type { EventSubjectRow } from './tables.ts';

/** A path split into its root (`payload` or `metadata`) and keys. */
export interface SubjectPath {
  root: 'payload' | 'metadata';
  keys: string[];
}

export function parseSubjectPaths(paths: readonly string[]): SubjectPath[] {
  return paths.map((path) => {
    const [root, ...keys] = path.split('.');
    return { root: root as SubjectPath['root'], keys };
  });
}

/** The subject ids at the paths (strings and numbers; arrays give each of their entries). */
export function subjectIdsOf(paths: readonly SubjectPath[], payload: Record<string, unknown>, metadataJson: string): string[] {
  const ids = new Set<string>();
  let metadata: Record<string, unknown> | undefined;
  for (const { root, keys } of paths) {
    let value: unknown;
    if (root === 'payload') value = payload;
    else {
      // Most events name no subject in their metadata: their text is not parsed.
      if (!metadataJson.includes(JSON.stringify(keys[0]))) continue;
      value = metadata ??= JSON.parse(metadataJson) as Record<string, unknown>;
    }
    for (const key of keys) value = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined;
    for (const item of Array.isArray(value) ? value : [value]) {
      if ((typeof item === 'string' && item.length > 0) || typeof item === 'number') ids.add(String(item));
    }
  }
  return [...ids];
}

/** Writes the batch's rows of the subject index. */
export async function indexSubjects(batch: CommittingBatch, paths: readonly SubjectPath[], hasher: ObserveContext['subjects']): Promise<void> {
  const rows: EventSubjectRow[] = [];
  for (const { row, payload } of batch.events) {
    for (const id of subjectIdsOf(paths, payload, row.metadata)) rows.push({ subject_hash: hasher.hash(id), event_id: row.id, session_id: row.session_id });
  }
  for (let i = 0; i < rows.length; i += 300)
    await batch.trx
      .insertInto('event_subjects')
      .values(rows.slice(i, i + 300))
      .execute();
}
