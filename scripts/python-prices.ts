// Writes python/vigil/prices.json, the Python client's copy of the price table, from @vigil/pricing
// (the one source of prices): `npm run generate:python-prices`. scripts/python-client.test.ts fails
// when the committed copy differs from what this would write.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_PRICES, MODEL_ALIASES } from '@vigil/pricing';

export const PYTHON_PRICES_FILE = fileURLToPath(new URL('../python/vigil/prices.json', import.meta.url));

/** The file's exact text: prices and aliases as @vigil/pricing has them, with a do-not-edit note. */
export function pythonPricesJson(): string {
  const document = {
    generatedFrom: 'packages/pricing/src/prices.ts by scripts/python-prices.ts; do not edit by hand',
    prices: DEFAULT_PRICES,
    aliases: MODEL_ALIASES,
  };
  return `${JSON.stringify(document, null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(PYTHON_PRICES_FILE, pythonPricesJson());
  console.log(`wrote ${PYTHON_PRICES_FILE}`);
}
