import { checkLoggedStates, isSafePattern, type Clock } from '@vigil/platform';
import type { GateDatabase } from '../schema.ts';
import { compilePolicySet, evaluatePolicies, type CompiledPolicySet, type EvaluatedRequest, type PolicyDecision } from './engine.ts';
import { allPolicies, policyState, policyVersion, toDefinition } from './store.ts';
import type { PolicyRow } from './tables.ts';

/** A policy the engine does not apply: its row is not as its last logged change left it. */
export interface RefusedPolicy {
  id: string;
  name: string;
  reason: string;
}

/**
 * The sorted, compiled policy set, rebuilt only when the policy version in the database moves.
 * A change through this instance invalidates it at once; changes through other instances sharing
 * the database are seen within `refreshMs` (the version row is read at most that often; 0 reads
 * it for every evaluation). A policy whose row does not match its last logged change (edited or
 * inserted in the database) is left out of the set, logged, and listed by `refused()`.
 */
export class PolicyCache {
  private version = -1;
  private checkedAt = Number.NEGATIVE_INFINITY;
  /** Bumped by invalidate(), so a check that began before a local change cannot mark the cache fresh. */
  private generation = 0;
  private compiled: CompiledPolicySet = compilePolicySet([], isSafePattern);
  private loading: Promise<void> | null = null;
  private refusedPolicies: RefusedPolicy[] = [];

  constructor(
    private readonly database: GateDatabase,
    private readonly clock: Clock,
    private readonly refreshMs: number,
    private readonly log: { warn(object: object, message: string): void },
  ) {}

  /** The policies left out of the set as of its last load. */
  async refused(): Promise<RefusedPolicy[]> {
    await this.current();
    return this.refusedPolicies;
  }

  /** The rows as their last logged changes left them; the others are refused (and logged). */
  private async loggedRows(rows: readonly PolicyRow[]): Promise<PolicyRow[]> {
    const verdicts = await checkLoggedStates(
      this.database.db,
      'policy',
      rows.map((row) => ({ id: row.id, state: policyState(row) })),
    );
    const refused: RefusedPolicy[] = [];
    const applied = rows.filter((row) => {
      const verdict = verdicts.get(row.id)!;
      if (verdict.logged) return true;
      refused.push({ id: row.id, name: row.name, reason: verdict.reason });
      this.log.warn({ policyId: row.id, reason: verdict.reason }, `policy ${row.id} (${row.name}) is not applied: ${verdict.reason}`);
      return false;
    });
    this.refusedPolicies = refused;
    return applied;
  }

  /** After a policy change committed through this instance. */
  invalidate(): void {
    this.generation += 1;
    this.checkedAt = Number.NEGATIVE_INFINITY;
  }

  /** The compiled set while its last check is fresh (within refreshMs), else undefined: the version must be read. */
  private fresh(now: number): CompiledPolicySet | undefined {
    return now - this.checkedAt < this.refreshMs ? this.compiled : undefined;
  }

  async current(): Promise<CompiledPolicySet> {
    const now = this.clock.now();
    const fresh = this.fresh(now);
    if (fresh !== undefined) return fresh;
    const generation = this.generation;
    const version = await policyVersion(this.database);
    if (version !== this.version) {
      this.loading ??= (async () => {
        const definitions = (await this.loggedRows(await allPolicies(this.database))).map(toDefinition);
        this.compiled = compilePolicySet(definitions, isSafePattern);
        this.version = version;
      })().finally(() => {
        this.loading = null;
      });
      await this.loading;
    }
    if (generation === this.generation) this.checkedAt = now;
    return this.compiled;
  }

  /** The set's decision for a request: at once, without a promise, while the set is fresh (every POST asks), else once its version is read. */
  evaluate(request: EvaluatedRequest): PolicyDecision | Promise<PolicyDecision> {
    const fresh = this.fresh(this.clock.now());
    return fresh !== undefined ? evaluatePolicies(fresh, request) : this.current().then((set) => evaluatePolicies(set, request));
  }
}
