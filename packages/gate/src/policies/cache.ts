import type { Clock } from '@vigil/platform';
import type { GateDatabase } from '../schema.ts';
import { compilePolicySet, evaluatePolicies, type CompiledPolicySet, type EvaluatedRequest, type PolicyDecision } from './engine.ts';
import { isSafePattern } from './regex-safety.ts';
import { allPolicies, policyVersion, toDefinition } from './store.ts';

/**
 * The sorted, compiled policy set, rebuilt only when the policy version in the database moves.
 * A change through this instance invalidates it at once; changes through other instances sharing
 * the database are seen within `refreshMs` (the version row is read at most that often; 0 reads
 * it for every evaluation).
 */
export class PolicyCache {
  private version = -1;
  private checkedAt = Number.NEGATIVE_INFINITY;
  /** Bumped by invalidate(), so a check that began before a local change cannot mark the cache fresh. */
  private generation = 0;
  private compiled: CompiledPolicySet = compilePolicySet([], isSafePattern);
  private loading: Promise<void> | null = null;

  constructor(
    private readonly database: GateDatabase,
    private readonly clock: Clock,
    private readonly refreshMs: number,
  ) {}

  /** After a policy change committed through this instance. */
  invalidate(): void {
    this.generation += 1;
    this.checkedAt = Number.NEGATIVE_INFINITY;
  }

  async current(): Promise<CompiledPolicySet> {
    const now = this.clock.now();
    if (now - this.checkedAt < this.refreshMs) return this.compiled;
    const generation = this.generation;
    const version = await policyVersion(this.database);
    if (version !== this.version) {
      this.loading ??= (async () => {
        const definitions = (await allPolicies(this.database)).map(toDefinition);
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

  async evaluate(request: EvaluatedRequest): Promise<PolicyDecision> {
    return evaluatePolicies(await this.current(), request);
  }
}
