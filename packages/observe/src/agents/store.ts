import type { AgentRow, ObserveDatabase } from '../schema.ts';

export async function listAgents(database: ObserveDatabase): Promise<AgentRow[]> {
  return database.db.selectFrom('agents').selectAll().orderBy('last_seen_at', 'desc').orderBy('id').execute();
}

export async function findAgent(database: ObserveDatabase, id: string): Promise<AgentRow | undefined> {
  return database.db.selectFrom('agents').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function clearPause(database: ObserveDatabase, id: string, clearModelOverride: boolean): Promise<void> {
  await database.db
    .updateTable('agents')
    .set(clearModelOverride ? { paused_at: null, pause_reason: null, model_override: null } : { paused_at: null, pause_reason: null })
    .where('id', '=', id)
    .execute();
}
