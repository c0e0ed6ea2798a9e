import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { addUsd, DEFAULT_PRICES, MAX_PRICE_PER_MILLION_USD, nanosOf, parsePriceOverrides, PriceTable, roundUsd, usdOf, type ModelPrice } from './index.ts';

const table = PriceTable.fromDefaults();
const blend = (price: ModelPrice): number => price.inputPerMillionUsd + price.outputPerMillionUsd;

describe('default price table', () => {
  test('has at least 40 entries from at least 6 providers', () => {
    assert.ok(DEFAULT_PRICES.length >= 40, `only ${DEFAULT_PRICES.length} entries`);
    assert.equal(table.all().length, DEFAULT_PRICES.length);
    const providers = new Set(DEFAULT_PRICES.map((p) => p.provider));
    assert.ok(providers.size >= 6, `only ${providers.size} providers`);
  });

  test('every entry is sourced, dated and priced', () => {
    for (const price of DEFAULT_PRICES) {
      const label = `${price.provider}/${price.model}`;
      assert.match(price.provider, /^[a-z]+$/, label);
      assert.ok(price.model.length > 0, label);
      assert.equal(new URL(price.source).protocol, 'https:', label);
      assert.match(price.asOf, /^\d{4}-\d{2}-\d{2}$/, label);
      assert.equal(new Date(`${price.asOf}T00:00:00Z`).toISOString().slice(0, 10), price.asOf, `${label}: real date`);
      assert.ok(Number.isFinite(price.inputPerMillionUsd) && price.inputPerMillionUsd > 0, label);
      assert.ok(Number.isFinite(price.outputPerMillionUsd) && price.outputPerMillionUsd >= 0, label);
    }
  });

  test('has no duplicate provider+model', () => {
    const keys = DEFAULT_PRICES.map((p) => `${p.provider}/${p.model}`.toLowerCase());
    assert.equal(new Set(keys).size, keys.length);
  });
});

describe('PriceTable.find', () => {
  test('is case-insensitive', () => {
    assert.equal(table.find('GPT-4o')?.model, 'gpt-4o');
    assert.equal(table.find('gpt-4o', 'OpenAI')?.model, 'gpt-4o');
    assert.equal(table.find('Claude-Sonnet-4-20250514')?.provider, 'anthropic');
  });

  test('falls back from a dated id to the longest table id that prefixes it', () => {
    assert.equal(table.find('gpt-4o-2024-08-06')?.model, 'gpt-4o');
    assert.equal(table.find('gpt-4o-mini-2024-07-18')?.model, 'gpt-4o-mini');
    assert.equal(table.find('gpt-4.1-2025-04-14')?.model, 'gpt-4.1');
    assert.equal(table.find('gemini-2.5-flash-lite-preview-06-17', 'google')?.model, 'gemini-2.5-flash-lite');
  });

  test('requires the prefix to be followed by a dash', () => {
    assert.equal(table.find('gpt-4omega'), undefined);
    assert.equal(table.find('o3x'), undefined);
  });

  test('resolves aliases', () => {
    assert.equal(table.find('claude-sonnet-4-0', 'anthropic')?.model, 'claude-sonnet-4-20250514');
    assert.equal(table.find('nova-pro')?.model, 'amazon.nova-pro-v1:0');
  });

  test('returns undefined for an unknown model or a provider mismatch', () => {
    assert.equal(table.find('no-such-model'), undefined);
    assert.equal(table.find('gpt-4o', 'anthropic'), undefined);
    assert.equal(table.find('gpt-4o-2024-08-06', 'google'), undefined);
  });
});

describe('PriceTable.costUsd', () => {
  test('computes input and output cost from per-1M prices', () => {
    // gpt-4o: $2.50 in, $10 out per 1M tokens.
    assert.equal(table.costUsd('gpt-4o', 'openai', 1_000_000, 500_000), 7.5);
    assert.equal(table.costUsd('gpt-4o-2024-08-06', undefined, 0, 0), 0);
  });

  test('is exact to the nano-dollar, without float noise', () => {
    // gpt-4o-mini: $0.15 in, $0.60 out per 1M tokens; (3 × 0.15 + 24 × 0.6) / 1e6 is 0.000014849999999999998 in doubles.
    assert.equal(table.costUsd('gpt-4o-mini', 'openai', 3, 24), 0.00001485);
    assert.equal(String(table.costUsd('gpt-4o-mini', 'openai', 3, 24)), '0.00001485');
  });

  test('is undefined when the model is unpriced', () => {
    assert.equal(table.costUsd('no-such-model', 'openai', 1000, 1000), undefined);
    assert.equal(table.costUsd('gpt-4o', 'mistral', 1000, 1000), undefined);
  });
});

describe('PriceTable.cheaperAlternatives', () => {
  test('lists only strictly cheaper models of the same provider, cheapest first', () => {
    const current = table.find('gpt-4o', 'openai')!;
    const alternatives = table.cheaperAlternatives('gpt-4o', 'openai');
    assert.ok(alternatives.length > 0);
    assert.ok(alternatives.every((p) => p.provider === 'openai'));
    assert.ok(alternatives.every((p) => blend(p) < blend(current)));
    assert.ok(!alternatives.some((p) => p.model === 'gpt-4o'));
    for (let i = 1; i < alternatives.length; i++) assert.ok(blend(alternatives[i - 1]!) <= blend(alternatives[i]!));
    const expected = table.all().filter((p) => p.provider === 'openai' && blend(p) < blend(current)).length;
    assert.equal(alternatives.length, expected);
  });

  test('is empty for the cheapest model and for an unknown one', () => {
    const cheapest = table
      .all()
      .filter((p) => p.provider === 'openai')
      .sort((a, b) => blend(a) - blend(b))[0]!;
    assert.deepEqual(table.cheaperAlternatives(cheapest.model, 'openai'), []);
    assert.deepEqual(table.cheaperAlternatives('no-such-model', 'openai'), []);
  });
});

describe('price overrides', () => {
  const today = new Date('2026-01-15T12:00:00Z');

  test('replace the matching entry and add new ones', () => {
    const overrides = parsePriceOverrides(
      JSON.stringify([
        { provider: 'OpenAI', model: 'GPT-4o', inputPerMillionUsd: 1, outputPerMillionUsd: 2 },
        { provider: 'acme', model: 'acme-1', inputPerMillionUsd: 0.5, outputPerMillionUsd: 0, source: 'https://acme.test/pricing', asOf: '2025-12-01' },
      ]),
      today,
    );
    assert.deepEqual(overrides[0], {
      provider: 'openai',
      model: 'GPT-4o',
      inputPerMillionUsd: 1,
      outputPerMillionUsd: 2,
      source: 'configuration',
      asOf: '2026-01-15',
    });

    const custom = PriceTable.fromDefaults(overrides);
    assert.equal(custom.all().length, DEFAULT_PRICES.length + 1);
    assert.equal(custom.find('gpt-4o', 'openai')?.inputPerMillionUsd, 1);
    assert.equal(custom.costUsd('gpt-4o-2024-08-06', 'openai', 1_000_000, 1_000_000), 3);
    assert.equal(custom.find('ACME-1')?.source, 'https://acme.test/pricing');
    assert.equal(custom.costUsd('acme-1', 'acme', 2_000_000, 1_000_000), 1);
    assert.equal(table.find('gpt-4o')?.inputPerMillionUsd, 2.5, 'the defaults are untouched');
  });

  test('accept an empty array', () => {
    assert.deepEqual(parsePriceOverrides('[]'), []);
  });

  test('reject invalid JSON', () => {
    assert.throws(() => parsePriceOverrides('[{'), /^Error: MODEL_PRICES: invalid JSON/);
  });

  test('reject a non-array', () => {
    assert.throws(() => parsePriceOverrides('{}'), /MODEL_PRICES: \(root\): /);
  });

  const valid = { provider: 'openai', model: 'gpt-4o', inputPerMillionUsd: 1, outputPerMillionUsd: 2 };

  test('reject a negative price, naming its path', () => {
    const json = JSON.stringify([valid, valid, { ...valid, inputPerMillionUsd: -1 }]);
    assert.throws(() => parsePriceOverrides(json), /MODEL_PRICES: \[2\]\.inputPerMillionUsd: /);
  });

  test('reject a price above MAX_PRICE_PER_MILLION_USD, naming its path', () => {
    assert.doesNotThrow(() => parsePriceOverrides(JSON.stringify([{ ...valid, outputPerMillionUsd: MAX_PRICE_PER_MILLION_USD }])));
    const json = JSON.stringify([valid, { ...valid, outputPerMillionUsd: MAX_PRICE_PER_MILLION_USD + 0.01 }]);
    assert.throws(() => parsePriceOverrides(json), /MODEL_PRICES: \[1\]\.outputPerMillionUsd: must be 0 to 1e6/);
  });

  test('reject a non-finite price', () => {
    assert.throws(
      () => parsePriceOverrides(`[{"provider":"openai","model":"x","inputPerMillionUsd":1,"outputPerMillionUsd":1e999}]`),
      /\[0\]\.outputPerMillionUsd: /,
    );
  });

  test('reject a missing or empty field, naming its path', () => {
    const { model: _model, ...missing } = valid;
    assert.throws(() => parsePriceOverrides(JSON.stringify([missing])), /MODEL_PRICES: \[0\]\.model: /);
    assert.throws(() => parsePriceOverrides(JSON.stringify([{ ...valid, provider: ' ' }])), /MODEL_PRICES: \[0\]\.provider: /);
  });

  test('reject a malformed asOf and an unknown key', () => {
    assert.throws(() => parsePriceOverrides(JSON.stringify([{ ...valid, asOf: 'June 2025' }])), /\[0\]\.asOf: /);
    assert.throws(() => parsePriceOverrides(JSON.stringify([{ ...valid, inputPerMillion: 1 }])), /MODEL_PRICES: \[0\]: .*inputPerMillion/);
  });
});

describe('money', () => {
  test('sums are exact to the nano-dollar and answered without float noise', () => {
    assert.equal(addUsd(0.1, 0.2), 0.3);
    assert.equal(roundUsd(0.1 + 0.2), 0.3);
    assert.equal(roundUsd(0.000014849999999999998), 0.00001485);
    assert.equal(usdOf(nanosOf(0.1) + nanosOf(0.2) + nanosOf(0.3)), 0.6);
    let total = 0;
    for (let i = 0; i < 1000; i += 1) total = addUsd(total, 0.001);
    assert.equal(total, 1);
  });

  test('ties round up, as the databases are asked to (floor(x·1e9 + 0.5))', () => {
    assert.equal(nanosOf(2.5e-9), 3);
    assert.equal(usdOf(2.5), 3e-9);
    assert.equal(roundUsd(1e6), 1e6);
  });
});
