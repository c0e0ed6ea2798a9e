/** The MODEL_PRICES setting: a JSON array of prices that replace or extend the built-in table. */
import { z } from 'zod';
import type { ModelPrice } from './index.ts';

/** USD per million tokens in MODEL_PRICES: a call at observe's largest token count (1e9) costs at most 1e9 USD. */
export const MAX_PRICE_PER_MILLION_USD = 1e6;

const CONFIG_NAME = 'MODEL_PRICES';

// Same wording as observe's other bounds (bounds.ts#boundedNumber): "must be 0 to 1e6".
const priceMessage = `must be 0 to ${MAX_PRICE_PER_MILLION_USD.toExponential().replace('e+', 'e')}`;
const price = z.number().min(0, priceMessage).max(MAX_PRICE_PER_MILLION_USD, priceMessage);

const overridesSchema = z.array(
  // Strict, so a misspelt key ('inputPerMillion') is reported instead of silently ignored.
  z.strictObject({
    provider: z.string().trim().min(1).toLowerCase(),
    model: z.string().trim().min(1),
    // z.number() rejects Infinity, which JSON.parse yields for literals such as 1e999.
    inputPerMillionUsd: price,
    outputPerMillionUsd: price,
    source: z.string().trim().min(1).default('configuration'),
    asOf: z.iso.date().optional(),
  }),
);

/** '[2].inputPerMillionUsd' for the path [2, 'inputPerMillionUsd'], so operators find the bad entry in their JSON. */
function formatPath(path: readonly PropertyKey[]): string {
  const text = path.map((segment, i) => (typeof segment === 'number' ? `[${segment}]` : `${i === 0 ? '' : '.'}${String(segment)}`)).join('');
  return text === '' ? '(root)' : text;
}

/**
 * Parses the MODEL_PRICES configuration: a JSON array of prices that replace or extend the table.
 * `source` defaults to 'configuration' and `asOf` to today, the day the figure was configured.
 */
export function parsePriceOverrides(json: string, today: Date = new Date()): ModelPrice[] {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new Error(`${CONFIG_NAME}: invalid JSON: ${(error as Error).message}`);
  }
  const result = overridesSchema.safeParse(raw);
  if (!result.success) {
    const details = result.error.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`);
    throw new Error(`${CONFIG_NAME}: ${details.join('; ')}`);
  }
  const asOf = today.toISOString().slice(0, 10);
  return result.data.map((entry) => ({ ...entry, asOf: entry.asOf ?? asOf }));
}
