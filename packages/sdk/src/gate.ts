/**
 * Client of the gate approval service (default http://localhost:3000). `requestApproval()` is
 * the one-liner for agents: it asks, then waits for the decision (a policy may decide at once, a
 * human later) and answers the decided request, or throws ApprovalTimeoutError.
 */
import { ApprovalTimeoutError, VigilError } from './errors.ts';
import { ServiceClient, sleep, type TransportOptions } from './http.ts';
import { trustedReceiptKeys, type ApprovalReceipt, type GatePublicKeys, type ReceiptPublicKey } from './receipts.ts';
import { environment } from './runtime.ts';
import type { CallOptions, GateBody, GatePaths, GateQuery, GateResult } from './types.ts';

export const DEFAULT_GATE_URL = 'http://localhost:3000';

/** Redemptions at issue a client keeps for runApproved to take (GateClient.takeRedemptionAtIssue). */
const MAX_REDEEMED_AT_ISSUE = 10_000;

export interface GateClientOptions extends Partial<TransportOptions> {
  /** Default: VIGIL_GATE_URL, else http://localhost:3000. */
  baseUrl?: string;
  /** Default: VIGIL_GATE_API_KEY. */
  apiKey?: string;
  /**
   * The gate's receipt signing key(s) to trust (its audit key: base64 of the raw 32 bytes, or a
   * PEM). Default: VIGIL_GATE_PUBLIC_KEY; without either, the key GET /api/audit/public-key answers
   * is fetched once and trusted. A pinned key wins; keys it certified by a rotation are trusted too.
   */
  receiptPublicKey?: ReceiptPublicKey | readonly ReceiptPublicKey[];
  /**
   * Failures of the work sent off the call path: the confirmation that an approved action ran
   * (runApproved). Default: a console warning.
   */
  onError?: (error: unknown) => void;
}

export type ApprovalRequest = GateResult<'/api/requests/{id}', 'get'>;
export type NewApprovalRequest = GateBody<'/api/requests', 'post'>;
export type CreatedApprovalRequest = GateResult<'/api/requests', 'post'>;
export type RequestStatus = ApprovalRequest['status'];

/** A decided request: `approved` is true only for status `approved`. */
export type ApprovalOutcome = ApprovalRequest & { approved: boolean };

export interface WaitOptions {
  /** How long to wait for a decision (default 5 minutes). */
  timeoutMs?: number;
  /** First pause between polls (default 500 ms); grows by half each poll up to maxPollIntervalMs. */
  pollIntervalMs?: number;
  /** Longest pause between polls (default 5 s). */
  maxPollIntervalMs?: number;
  signal?: AbortSignal;
  /** Called once when the request is pending (not decided by a policy), e.g. to tell a human where to decide. */
  onPending?: (request: ApprovalRequest) => void;
}

export class GateClient extends ServiceClient<GatePaths> {
  private readonly pinnedReceiptKeys: readonly ReceiptPublicKey[];
  private receiptKeyCache: Promise<Uint8Array[]> | undefined;
  /**
   * Receipts this client's own POST /api/requests redeemed at issue (`redeem: true`), by request id:
   * their nonce, until runApproved's redeem step takes it (once).
   */
  private readonly redeemedAtIssue = new Map<string, string>();
  /** Confirmations sent off the call path, until they settle (flush). */
  private readonly inFlight = new Set<Promise<void>>();
  private readonly onError: (error: unknown) => void;

  constructor(options: GateClientOptions = {}) {
    super('gate', options, { baseUrl: environment('VIGIL_GATE_URL') ?? DEFAULT_GATE_URL, apiKey: environment('VIGIL_GATE_API_KEY') });
    const pinned = options.receiptPublicKey ?? environment('VIGIL_GATE_PUBLIC_KEY');
    this.pinnedReceiptKeys =
      pinned === undefined ? [] : typeof pinned === 'string' || pinned instanceof Uint8Array ? [pinned] : [...(pinned as readonly ReceiptPublicKey[])];
    this.onError = options.onError ?? ((error: unknown) => console.warn(`vigil: ${error instanceof Error ? error.message : String(error)}`));
  }

  // ------------------------------------------------------------------------------------------
  // Receipts

  /** The receipt of an approved request (404, VigilNotFoundError, when it is not approved). */
  getReceipt(id: string, options?: CallOptions): Promise<ApprovalReceipt> {
    return this.call('get', '/api/requests/{id}/receipt', { params: { id }, ...options });
  }

  /**
   * Redeems a receipt for the action and params about to run: once. The gate answers 409
   * (VigilConflictError) for a replay, 422 when the action or params differ, 410 when expired,
   * 401/400 for a bad signature or a malformed receipt (runApproved turns these into ApprovalReceiptError).
   */
  redeemReceipt(redemption: GateBody<'/api/receipts/redeem', 'post'>, options?: CallOptions) {
    // Never retried: a redemption that reached the gate is spent, and a retry would answer 409.
    return this.call('post', '/api/receipts/redeem', { body: redemption, retry: false, ...options });
  }

  /**
   * Takes the redemption at issue of `requestId`'s receipt (nonce `nonce`): true once when this
   * client's own POST /api/requests asked `redeem: true` and the gate answered the receipt redeemed
   * for it; false otherwise, and every later time (the gate refuses a separate redeem of it: 409).
   * runApproved's redeem step; a receipt obtained any other way is redeemed by POST /api/receipts/redeem.
   */
  takeRedemptionAtIssue(requestId: string, nonce: string): boolean {
    if (this.redeemedAtIssue.get(requestId) !== nonce) return false;
    this.redeemedAtIssue.delete(requestId);
    return true;
  }

  /**
   * The keys receipts are verified with (trustedReceiptKeys): the pinned ones and those certified
   * from them, else the gate's current key. Fetched once and cached; `refresh` fetches again (a
   * receipt signed by a key not known yet: the gate rotated since).
   */
  async receiptKeys(options: { refresh?: boolean; signal?: AbortSignal } = {}): Promise<Uint8Array[]> {
    if (this.receiptKeyCache === undefined || options.refresh === true) {
      const fetched = this.call('get', '/api/audit/public-key', { signal: options.signal }).then((answer) =>
        trustedReceiptKeys(answer as GatePublicKeys, this.pinnedReceiptKeys),
      );
      // Pinned keys alone still verify when the gate cannot list its keys (an old gate, a key without request:read).
      this.receiptKeyCache = fetched.catch(async (error: unknown) => {
        this.receiptKeyCache = undefined;
        if (this.pinnedReceiptKeys.length > 0) return trustedReceiptKeys({ keyId: '', publicKey: '', keys: [] }, this.pinnedReceiptKeys);
        throw error;
      });
    }
    return this.receiptKeyCache;
  }

  // ------------------------------------------------------------------------------------------
  // Requests

  /**
   * Creates a request; the policy engine may decide it at once (see `policyDecision`). With
   * `redeem: true`, a policy approval at once also redeems its receipt for this client (`redemption`),
   * which runApproved then takes instead of a separate redeem.
   */
  async createRequest(request: NewApprovalRequest, options?: CallOptions): Promise<CreatedApprovalRequest> {
    const created = await this.call('post', '/api/requests', { body: request, ...options });
    if (created.redemption && created.receipt !== null && created.redemption.requestId === created.id) {
      // Bounded: a redemption never taken (the call did not run) only costs its entry; the oldest goes first.
      if (this.redeemedAtIssue.size >= MAX_REDEEMED_AT_ISSUE) this.redeemedAtIssue.delete(this.redeemedAtIssue.keys().next().value!);
      this.redeemedAtIssue.set(created.id, created.receipt.nonce);
    }
    return created;
  }

  listRequests(query?: GateQuery<'/api/requests', 'get'>, options?: CallOptions) {
    return this.call('get', '/api/requests', { query, ...options });
  }

  getRequest(id: string, options?: CallOptions) {
    return this.call('get', '/api/requests/{id}', { params: { id }, ...options });
  }

  /**
   * Approves or denies a pending request; `decidedBy` is derived by the gate from this client's credential. For a
   * request that needs several approvals, a vote that does not settle it answers `{id, status: 'pending', approvals}`.
   */
  decide(id: string, decision: 'approved' | 'denied', reason?: string, options?: CallOptions) {
    return this.call('post', '/api/requests/{id}/decide', { params: { id }, body: reason === undefined ? { decision } : { decision, reason }, ...options });
  }

  /** Records that an approved action was executed, with its result (once per request). */
  confirm(id: string, result: Record<string, unknown> = {}, options?: CallOptions) {
    return this.call('post', '/api/requests/{id}/confirm', { params: { id }, body: { result }, ...options });
  }

  /**
   * confirm, sent off the call path (runApproved does, so the action's result is not held up by
   * the gate's write): delivered in the background, with the client's retries; a failure goes to
   * `onError`. `flush()` waits for every one sent.
   */
  confirmInBackground(id: string, result: Record<string, unknown>): void {
    // Started on the next turn of the event loop: even building the request is off the call path.
    const sent = new Promise<void>((resolve) => setTimeout(resolve, 0))
      .then(() => this.confirm(id, result))
      .then(
        () => undefined,
        (error: unknown) => this.onError(new VigilError(`could not confirm approval request ${id}: ${(error as Error).message}`, { cause: error })),
      );
    this.inFlight.add(sent);
    void sent.finally(() => this.inFlight.delete(sent));
  }

  /** Waits until every confirmation sent off the call path has been delivered (or reported to onError). */
  async flush(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  getAudit(id: string, options?: CallOptions) {
    return this.call('get', '/api/requests/{id}/audit', { params: { id }, ...options });
  }

  /** Verifies the hash chain of a request's audit trail: `{valid, brokenAt, reason, headSeq, headHash, entryCount}`. */
  verifyAudit(id: string, options?: CallOptions) {
    return this.call('get', '/api/requests/{id}/audit/verify', { params: { id }, ...options });
  }

  /** Audit entries of all requests, newest first; pass `nextCursor` back as `cursor` for the next page (request:read). */
  listAudit(query?: GateQuery<'/api/audit', 'get'>, options?: CallOptions) {
    return this.call('get', '/api/audit', { query, ...options });
  }

  /** Who created, changed or deleted policies, keys and webhooks, newest first, cursor-paged like listAudit (admin). */
  listAdminChanges(query?: GateQuery<'/api/audit/changes', 'get'>, options?: CallOptions) {
    return this.call('get', '/api/audit/changes', { query, ...options });
  }

  /**
   * Creates a request and waits until it is decided: answers at once when a policy decided it,
   * else polls GET /api/requests/:id with a growing interval. Answers the decided (approved,
   * denied or expired) request with `approved`; throws ApprovalTimeoutError after `timeoutMs`
   * (the request stays pending on the gate: give it an `expiresAt` to have it expire too).
   */
  async requestApproval(request: NewApprovalRequest, options: WaitOptions = {}): Promise<ApprovalOutcome> {
    const created = await this.createRequest(request, { signal: options.signal });
    return this.waitForDecision(created.id, options, created);
  }

  /** Waits for the decision on an existing request (see requestApproval). */
  async waitForDecision(id: string, options: WaitOptions = {}, known?: ApprovalRequest): Promise<ApprovalOutcome> {
    const timeoutMs = options.timeoutMs ?? 5 * 60_000;
    const maxInterval = options.maxPollIntervalMs ?? 5000;
    let interval = Math.min(options.pollIntervalMs ?? 500, maxInterval);
    const started = Date.now();
    let current = known ?? (await this.getRequest(id, { signal: options.signal }));
    if (current.status === 'pending') options.onPending?.(current);
    for (;;) {
      if (current.status !== 'pending') return { ...current, approved: current.status === 'approved' };
      const remaining = timeoutMs - (Date.now() - started);
      if (remaining <= 0) throw new ApprovalTimeoutError(id, timeoutMs, current.status);
      await sleep(Math.min(interval, remaining), options.signal);
      interval = Math.min(maxInterval, interval * 1.5);
      current = await this.getRequest(id, { signal: options.signal });
    }
  }

  // ------------------------------------------------------------------------------------------
  // Administration (admin scope; webhooks need webhook:manage)

  listPolicies(query?: GateQuery<'/api/policies', 'get'>, options?: CallOptions) {
    return this.call('get', '/api/policies', { query, ...options });
  }

  createPolicy(policy: GateBody<'/api/policies', 'post'>, options?: CallOptions) {
    return this.call('post', '/api/policies', { body: policy, ...options });
  }

  deletePolicy(id: string, options?: CallOptions) {
    return this.call('delete', '/api/policies/{id}', { params: { id }, ...options });
  }

  // ------------------------------------------------------------------------------------------
  // Grants (create and revoke need request:decide, reading request:read)

  /** Grants an action to an agent or session for a while and/or N uses: matching routed requests are approved by it (decidedBy `grant:<id>`). */
  createGrant(grant: GateBody<'/api/grants', 'post'>, options?: CallOptions) {
    return this.call('post', '/api/grants', { body: grant, ...options });
  }

  listGrants(query?: GateQuery<'/api/grants', 'get'>, options?: CallOptions) {
    return this.call('get', '/api/grants', { query, ...options });
  }

  /** A grant with its uses (the requests it approved). */
  getGrant(id: string, options?: CallOptions) {
    return this.call('get', '/api/grants/{id}', { params: { id }, ...options });
  }

  revokeGrant(id: string, options?: CallOptions) {
    return this.call('post', '/api/grants/{id}/revoke', { params: { id }, ...options });
  }

  // ------------------------------------------------------------------------------------------
  // Budgets (changes need admin, reading request:read)

  /** A budget the gate enforces: over softUsd requests go to a person, over hardUsd they are denied and the agent paused. */
  createBudget(budget: GateBody<'/api/budgets', 'post'>, options?: CallOptions) {
    return this.call('post', '/api/budgets', { body: budget, ...options });
  }

  listBudgets(options?: CallOptions) {
    return this.call('get', '/api/budgets', { ...options });
  }

  /** A budget with its current window's spend figures and its breaches. */
  getBudget(id: string, options?: CallOptions) {
    return this.call('get', '/api/budgets/{id}', { params: { id }, ...options });
  }

  updateBudget(id: string, patch: GateBody<'/api/budgets/{id}', 'put'>, options?: CallOptions) {
    return this.call('put', '/api/budgets/{id}', { params: { id }, body: patch, ...options });
  }

  deleteBudget(id: string, options?: CallOptions) {
    return this.call('delete', '/api/budgets/{id}', { params: { id }, ...options });
  }

  /** The budgets covering a request now (by its context), with their spend and thresholds. */
  getRequestBudgets(requestId: string, options?: CallOptions) {
    return this.call('get', '/api/requests/{id}/budgets', { params: { id: requestId }, ...options });
  }

  createApiKey(key: GateBody<'/api/api-keys', 'post'>, options?: CallOptions) {
    return this.call('post', '/api/api-keys', { body: key, ...options });
  }

  listApiKeys(options?: CallOptions) {
    return this.call('get', '/api/api-keys', { ...options });
  }

  revokeApiKey(id: string, options?: CallOptions) {
    return this.call('delete', '/api/api-keys/{id}', { params: { id }, ...options });
  }

  createWebhook(webhook: GateBody<'/api/webhooks', 'post'>, options?: CallOptions) {
    return this.call('post', '/api/webhooks', { body: webhook, ...options });
  }

  // Approver groups and delegations (docs/guide/approvers.md): listed with request:read, changed with admin.

  listApproverGroups(options?: CallOptions) {
    return this.call('get', '/api/approver-groups', { ...options });
  }

  createApproverGroup(group: GateBody<'/api/approver-groups', 'post'>, options?: CallOptions) {
    return this.call('post', '/api/approver-groups', { body: group, ...options });
  }

  updateApproverGroup(id: string, changes: GateBody<'/api/approver-groups/{id}', 'put'>, options?: CallOptions) {
    return this.call('put', '/api/approver-groups/{id}', { params: { id }, body: changes, ...options });
  }

  deleteApproverGroup(id: string, options?: CallOptions) {
    return this.call('delete', '/api/approver-groups/{id}', { params: { id }, ...options });
  }

  listDelegations(options?: CallOptions) {
    return this.call('get', '/api/delegations', { ...options });
  }

  createDelegation(delegation: GateBody<'/api/delegations', 'post'>, options?: CallOptions) {
    return this.call('post', '/api/delegations', { body: delegation, ...options });
  }

  revokeDelegation(id: string, options?: CallOptions) {
    return this.call('delete', '/api/delegations/{id}', { params: { id }, ...options });
  }

  health(options?: CallOptions) {
    return this.call('get', '/health', { ...options });
  }
}
