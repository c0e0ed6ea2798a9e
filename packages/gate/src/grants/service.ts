import { LoggedStates, newId, type ZodApp } from '@vigil/platform';
import type { Transaction } from 'kysely';
import type { AuditActor } from '../auth/index.ts';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import { channelsAt } from '../escalation/index.ts';
import { requestParties, storedDecision, type GrantApprover, type RequestRow, type RequestService } from '../requests/index.ts';
import type { GateSchema } from '../schema.ts';
import type { Notice } from '../webhooks/index.ts';
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

/** The chat channels of a request as it stands (its rule's, at its escalation tier); none: each platform's default. */
function channelsOf(request: RequestRow | undefined): readonly string[] {
  return request === undefined ? [] : channelsAt(storedDecision(request), request.escalation_tier);
}

function grantNotice(event: 'grant.created' | 'grant.revoked' | 'grant.used_up', row: GrantRow, by: string, channels: readonly string[]): Notice {
  return {
    event,
    channels,
    grant: {
      id: row.id,
      action: row.action,
      agentId: row.agent_id,
      sessionId: row.session_id,
      expiresAt: row.expires_at === null ? null : Number(row.expires_at),
      maxUses: row.max_uses === null ? null : Number(row.max_uses),
      uses: Number(row.uses),
      by,
    },
  };
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

  /** The live grants as last read, while that read is fresh; undefined when they must be read again. */
  private freshLive(now: number): GrantRow[] | undefined {
    return this.live !== null && now - this.live.at < this.ctx.config.cacheRefreshMs ? this.live.grants : undefined;
  }

  private async liveGrants(now: number): Promise<GrantRow[]> {
    const fresh = this.freshLive(now);
    if (fresh !== undefined) return fresh;
    const grants = await liveGrants(this.ctx.database, now);
    this.live = { at: now, grants };
    return grants;
  }

  async create(input: NewGrant, by: AuditActor): Promise<GrantRow> {
    let { action, agentId, sessionId } = input;
    const request = input.requestId === undefined ? undefined : await this.requests.get(input.requestId);
    if (input.requestId !== undefined) {
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
    await this.ctx.outbox.withNotices((announce) =>
      insertGrant(this.ctx.database, row, by, (trx) => announce(trx, [grantNotice('grant.created', row, by.actor, channelsOf(request))])),
    );
    this.live = null;
    return row;
  }

  async revoke(id: string, by: AuditActor): Promise<GrantRow> {
    // Announced where the grant's request was posted (request_id never changes).
    const requestId = (await findGrant(this.ctx.database, id))?.request_id ?? null;
    const channels = channelsOf(requestId === null ? undefined : await this.requests.get(requestId));
    const outcome = await this.ctx.outbox.withNotices((announce) =>
      revokeGrant(this.ctx.database, id, by, this.ctx.clock.now(), (trx, revoked) =>
        announce(trx, [grantNotice('grant.revoked', revoked, by.actor, channels)]),
      ),
    );
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

  /**
   * The oldest live grant of the request's action for its agent or session, as its last logged change
   * left it; undefined at once for a request of neither, or while no grant is live.
   */
  match(request: { action: string; context: Record<string, unknown> }, now: number, passedOver: ReadonlySet<string>): Promise<string | undefined> | undefined {
    const { agentId, sessionId } = requestParties(request.context);
    if (agentId === undefined && sessionId === undefined) return undefined;
    if (this.freshLive(now)?.length === 0) return undefined;
    return this.matchLive(request.action, agentId, sessionId, now, passedOver);
  }

  private async matchLive(
    action: string,
    agentId: string | undefined,
    sessionId: string | undefined,
    now: number,
    passedOver: ReadonlySet<string>,
  ): Promise<string | undefined> {
    for (const grant of await this.liveGrants(now)) {
      if (grant.action !== action || passedOver.has(grant.id)) continue;
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

  /** Takes a use; the grant's last use is announced (grant.used_up) where the request that took it would be posted. */
  async claim(trx: Transaction<GateSchema>, grantId: string, request: RequestRow, now: number): Promise<Notice[] | null> {
    const grant = await claimUse(trx, grantId, request.id, now);
    if (grant === null) return null;
    const usedUp = grant.max_uses !== null && Number(grant.uses) >= Number(grant.max_uses);
    return usedUp ? [grantNotice('grant.used_up', grant, `request:${request.id}`, channelsOf(request))] : [];
  }
}
