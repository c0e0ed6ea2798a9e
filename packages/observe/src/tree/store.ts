import type { EventReader } from '../sessions/index.ts';
import { EVENT_DERIVED_COLUMNS, sessionEventsQuery } from '../events/index.ts';
import type { TreeEventRow } from './build.ts';

/**
 * The first `limit` events of a session in timeline order, with the columns the tree reads (TreeEventRow): one
 * range of the (session_id, ts, seq) index. The payload comes only for custom and tool_error events
 * (their type, their error), so large LLM messages are not read.
 */
export async function readTreeEvents({ database, sealer }: EventReader, sessionId: string, limit: number): Promise<TreeEventRow[]> {
  const rows = await sessionEventsQuery(database.db, sessionId)
    .select(['id', 'seq', 'ts', 'event_type', 'metadata', ...EVENT_DERIVED_COLUMNS])
    .select((eb) => eb.case().when('event_type', 'in', ['custom', 'tool_error']).then(eb.ref('payload')).end().as('payload'))
    .limit(limit)
    .execute();
  return sealer.open(rows);
}
