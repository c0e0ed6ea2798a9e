import { roundUsd } from './money.ts';
import { DEFAULT_PRICES, MODEL_ALIASES } from './prices.ts';

export { DEFAULT_PRICES, MODEL_ALIASES };
// The MODEL_PRICES parser lives in a module of its own: it needs zod, and a bundler drops the
// module (and zod with it) from code that only prices calls, such as @vigil/sdk in a browser.
export { MAX_PRICE_PER_MILLION_USD, parsePriceOverrides } from './overrides.ts';
export { addUsd, NANOS_PER_USD, nanosOf, roundUsd, usdOf } from './money.ts';

/** A list price in USD per 1M tokens. */
export interface ModelPrice {
  provider: string;
  model: string;
  inputPerMillionUsd: number;
  outputPerMillionUsd: number;
  /** Where the figure comes from: a pricing page URL, or 'configuration' for operator overrides. */
  source: string;
  /** ISO date (YYYY-MM-DD) the figure is known to hold. */
  asOf: string;
}

const lower = (value: string): string => value.trim().toLowerCase();
const entryKey = (price: ModelPrice): string => `${lower(price.provider)}\n${lower(price.model)}`;

/**
 * The price of one model, used to compare models: the cost of 1M input plus 1M output tokens.
 * Equal weights keep the ordering explainable; real workloads read more than they write.
 */
const blended = (price: ModelPrice): number => price.inputPerMillionUsd + price.outputPerMillionUsd;

export class PriceTable {
  private readonly entries: readonly ModelPrice[];
  private readonly aliases: ReadonlyMap<string, string>;

  constructor(entries: readonly ModelPrice[], aliases: Readonly<Record<string, string>> = MODEL_ALIASES) {
    this.entries = entries.map((entry) => ({ ...entry }));
    this.aliases = new Map(Object.entries(aliases).map(([alias, model]) => [lower(alias), lower(model)]));
  }

  /** The built-in table with overrides applied: same provider+model (case-insensitive) replaces, anything else is added. */
  static fromDefaults(overrides: readonly ModelPrice[] = []): PriceTable {
    const merged = new Map(DEFAULT_PRICES.map((price) => [entryKey(price), price]));
    for (const override of overrides) merged.set(entryKey(override), override);
    return new PriceTable([...merged.values()]);
  }

  /**
   * Looks a model up case-insensitively: exact id, then alias, then the longest table id that
   * prefixes `model` followed by '-' (so dated snapshots such as 'gpt-4o-2024-08-06' bill as 'gpt-4o').
   * A non-empty provider restricts the search to that provider.
   */
  find(model: string, provider?: string): ModelPrice | undefined {
    const id = lower(model);
    const wanted = provider === undefined ? '' : lower(provider);
    const candidates = wanted === '' ? this.entries : this.entries.filter((entry) => lower(entry.provider) === wanted);
    const byId = (target: string): ModelPrice | undefined => candidates.find((entry) => lower(entry.model) === target);

    const exact = byId(id);
    if (exact) return exact;
    const aliased = this.aliases.get(id);
    if (aliased !== undefined) {
      const target = byId(aliased);
      if (target) return target;
    }
    let best: ModelPrice | undefined;
    for (const entry of candidates) {
      const prefix = lower(entry.model);
      if (id.startsWith(`${prefix}-`) && (!best || prefix.length > lower(best.model).length)) best = entry;
    }
    return best;
  }

  /** Cost in USD of one call, to the nano-dollar, or undefined when the model has no price (unknown is not free). */
  costUsd(model: string, provider: string | undefined, inputTokens: number, outputTokens: number): number | undefined {
    const price = this.find(model, provider);
    if (!price) return undefined;
    return roundUsd((inputTokens * price.inputPerMillionUsd + outputTokens * price.outputPerMillionUsd) / 1_000_000);
  }

  /** Models of the same provider with a strictly lower blended price (input + output per 1M), cheapest first. */
  cheaperAlternatives(model: string, provider?: string): ModelPrice[] {
    const current = this.find(model, provider);
    if (!current) return [];
    const sameProvider = lower(current.provider);
    return this.entries
      .filter((entry) => lower(entry.provider) === sameProvider && blended(entry) < blended(current))
      .sort((a, b) => blended(a) - blended(b) || (a.model < b.model ? -1 : a.model > b.model ? 1 : 0))
      .map((entry) => ({ ...entry }));
  }

  all(): ModelPrice[] {
    return this.entries.map((entry) => ({ ...entry }));
  }
}
