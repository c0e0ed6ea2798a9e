import { type EventReader, findSession } from '../sessions/index.ts';
import { buildSessionTree, TREE_EVENT_LIMIT, type SessionTree } from './build.ts';
import { readTreeEvents } from './store.ts';

/** A session's tree from its first TREE_EVENT_LIMIT events (one more is read to tell a truncated tree); undefined for an unknown session. */
export async function sessionTree(reader: EventReader, sessionId: string, limit = TREE_EVENT_LIMIT): Promise<SessionTree | undefined> {
  const session = await findSession(reader.database, sessionId);
  if (!session) return undefined;
  const rows = await readTreeEvents(reader, sessionId, limit + 1);
  const truncated = rows.length > limit;
  return buildSessionTree(truncated ? rows.slice(0, limit) : rows, truncated);
}
