import type { GateDatabase } from '../schema.ts';
import { compilePolicySet, evaluatePolicies, type CompiledPolicySet, type EvaluatedRequest, type PolicyDecision } from './engine.ts';
import { isSafePattern } from './regex-safety.ts';
import { allPolicies, policyVersion, toDefinition } from './store.ts';

/**
 * The sorted, compiled policy set, rebuilt only when the policy version in the database moves.
 * Each evaluation reads that one counter row, so a change made through any instance sharing the
 * database takes effect on the next request everywhere.
 */
export class PolicyCache {
  private version = -1;
  private compiled: CompiledPolicySet = compilePolicySet([], isSafePattern);
  private loading: Promise<void> | null = null;

  constructor(private readonly database: GateDatabase) {}

  async current(): Promise<CompiledPolicySet> {
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
    return this.compiled;
  }

  async evaluate(request: EvaluatedRequest): Promise<PolicyDecision> {
    return evaluatePolicies(await this.current(), request);
  }
}
