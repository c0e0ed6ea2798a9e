import type { ObserveDatabase } from '../schema.ts';
import type { AgentRow } from '../events/index.ts';
import { SYSTEM_AGENT_ID } from '../events/index.ts';

/** The user's agents; the system agent (alert bookkeeping) is readable by id only. */
export async function listAgents(database: ObserveDatabase): Promise<AgentRow[]> {
  return database.db.selectFrom('agents').selectAll().where('id', '<>', SYSTEM_AGENT_ID).orderBy('last_seen_at', 'desc').orderBy('id').execute();
}

export async function findAgent(database: ObserveDatabase, id: string): Promise<AgentRow | undefined> {
  return database.db.selectFrom('agents').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Clears the pause, and the model override and approval policy when asked. */
export async function clearPause(database: ObserveDatabase, id: string, also: { modelOverride: boolean; approvalPolicy: boolean }): Promise<void> {
  await database.db
    .updateTable('agents')
    .set({
      paused_at: null,
      pause_reason: null,
      ...(also.modelOverride ? { model_override: null } : {}),
      ...(also.approvalPolicy ? { approval_policy_id: null } : {}),
    })
    .where('id', '=', id)
    .execute();
}

/** Pauses an agent by hand; an agent already paused keeps its first pause (time and reason). */
export async function setPause(database: ObserveDatabase, id: string, at: number, reason: string): Promise<void> {
  await database.db.updateTable('agents').set({ paused_at: at, pause_reason: reason }).where('id', '=', id).where('paused_at', 'is', null).execute();
}
