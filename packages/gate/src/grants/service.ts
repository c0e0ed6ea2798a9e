import { LoggedStates, newId, type ZodApp } from '@vigil/platform';
import type { Transaction } from 'kysely';
import type { AuditActor } from '../auth/index.ts';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import { requestParties, type GrantApprover, type RequestService } from '../requests/index.ts';
import type { GateSchema } from '../schema.ts';
import { claimUse, findGrant, GRANT_CHANGES, grantState, grantUses, insertGrant, listGrants, liveGrants, revokeGrant, type ListGrantsQuery } from './store.ts';
import type { GrantRow, GrantUseRow } from './tables.ts';

/** A grant as POST /api/grants takes it (after defaults from its request, when it names one). */
export interface NewGrant {
  action?: string;
  agentId?: string;
  sessionId?: string;
  requestId?: string;
  durationSeconds?: number;
  maxUses?: number;
  note?: string;
}

/**
 * Time-limited grants: a human's standing approval of one action for one agent and/or session, for
 * a while and/or a number of uses. Requests a policy routes for a decision that a live grant covers
 * are approved by it (requests/service.ts takes the use in the request's creation transaction).
 */
export class GrantService implements GrantApprover {
  /** Grants are applied only as their last logged change left them. */
  private readonly logged: LoggedStates<GateSchema>;

  constructor(
    private readonly ctx: GateContext,
    private readonly requests: RequestService,
    private readonly log: ZodApp['log'],
  ) {
    this.logged = new LoggedStates(ctx.database.db, ctx.clock, ctx.config.cacheRefreshMs);
  }

  /**
   * The live grants (not revoked, expired or used up), read at most every GATE_CACHE_REFRESH_MS and
   * at once after a change on this instance: matching a request costs no query. A use count read
   * here may be behind; the use itself is taken in the creation's transaction (claim), which passes
   * a grant with none left over.
   */
  private live: { at: number; grants: GrantRow[] } | null = null;

  private async liveGrants(now: number): Promise<GrantRow[]> {
    if (this.live !== null && now - this.live.at < this.ctx.config.cacheRefreshMs) return this.live.grants;
    const grants = await liveGrants(this.ctx.database, now);
    this.live = { at: now, grants };
    return grants;
  }

  async create(input: NewGrant, by: AuditActor): Promise<GrantRow> {
    let { action, agentId, sessionId } = input;
    if (input.requestId !== undefined) {
      const request = await this.requests.get(input.requestId);
      if (!request) throw gateError('requestNotFound');
      if (action !== undefined && action !== request.action)
        throw gateError('grantInvalid', `action "${action}" is not the request's action "${request.action}"`);
      action = request.action;
      const context = JSON.parse(request.context) as Record<string, unknown>;
      if (agentId === undefined && sessionId === undefined) {
        ({ agentId, sessionId } = requestParties(context));
      }
    }
    if (action === undefined) throw gateError('grantInvalid', 'A grant needs an action (or a requestId to take it from)');
    if (agentId === undefined && sessionId === undefined)
      throw gateError('grantInvalid', 'A grant needs an agentId or a sessionId (the request names neither in its context)');
    if (input.durationSeconds === undefined && input.maxUses === undefined) throw gateError('grantInvalid', 'A grant needs durationSeconds, maxUses or both');
    const now = this.ctx.clock.now();
    const row: GrantRow = {
      id: newId(),
      action,
      agent_id: agentId ?? null,
      session_id: sessionId ?? null,
      expires_at: input.durationSeconds === undefined ? null : now + input.durationSeconds * 1000,
      max_uses: input.maxUses ?? null,
      uses: 0,
      request_id: input.requestId ?? null,
      note: input.note ?? null,
      created_at: now,
      created_by: by.actor,
      created_by_key_id: by.keyId,
      revoked_at: null,
      revoked_by: null,
    };
    await insertGrant(this.ctx.database, row, by);
    this.live = null;
    return row;
  }

  async revoke(id: string, by: AuditActor): Promise<GrantRow> {
    const outcome = await revokeGrant(this.ctx.database, id, by, this.ctx.clock.now());
    if (outcome.kind === 'missing') throw gateError('grantNotFound');
    if (outcome.kind === 'already') throw gateError('grantRevoked');
    this.logged.forget();
    this.live = null;
    return outcome.row;
  }

  async get(id: string): Promise<{ row: GrantRow; uses: GrantUseRow[] }> {
    const row = await findGrant(this.ctx.database, id);
    if (!row) throw gateError('grantNotFound');
    return { row, uses: await grantUses(this.ctx.database, id) };
  }

  list(query: ListGrantsQuery): Promise<{ rows: GrantRow[]; total: number }> {
    return listGrants(this.ctx.database, query, this.ctx.clock.now());
  }

  /** The oldest live grant of the request's action for its agent or session, as its last logged change left it. */
  async match(request: { action: string; context: Record<string, unknown> }, now: number, passedOver: ReadonlySet<string>): Promise<string | undefined> {
    const { agentId, sessionId } = requestParties(request.context);
    if (agentId === undefined && sessionId === undefined) return undefined;
    for (const grant of await this.liveGrants(now)) {
      if (grant.action !== request.action || passedOver.has(grant.id)) continue;
      if (grant.expires_at !== null && grant.expires_at <= now) continue;
      if (grant.agent_id !== null && grant.agent_id !== agentId) continue;
      if (grant.session_id !== null && grant.session_id !== sessionId) continue;
      const verdict = await this.logged.check(GRANT_CHANGES, grant.id, grantState(grant));
      if (!verdict.logged) {
        this.log.warn({ grantId: grant.id, reason: verdict.reason }, `grant ${grant.id} is not applied: ${verdict.reason}`);
        continue;
      }
      return grant.id;
    }
    return undefined;
  }

  async claim(trx: Transaction<GateSchema>, grantId: string, requestId: string, now: number): Promise<boolean> {
    return (await claimUse(trx, grantId, requestId, now)) !== null;
  }
}
