/**
 * LLM prices: the same table observe uses (@vigil/pricing), so the SDK and the server never
 * disagree on a model's price. Pass `prices` to the client to apply the overrides you configured
 * on the server with MODEL_PRICES.
 */
import { DEFAULT_PRICES, PriceTable, type ModelPrice } from '@vigil/pricing';

export { DEFAULT_PRICES, PriceTable, type ModelPrice };

/** A PriceTable from the option a client accepts: a table, overrides of the built-in one, or nothing. */
export function priceTable(prices: PriceTable | readonly ModelPrice[] | undefined): PriceTable {
  if (prices instanceof PriceTable) return prices;
  return PriceTable.fromDefaults(prices ?? []);
}
