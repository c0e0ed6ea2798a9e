// The one schema the CLI composes from the shared settings (@vigil/platform) and each service's
// slice (@vigil/observe, @vigil/gate): every variable documented, every bad one reported at once.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { gateConfigFromEnvironment, gateEnvironment } from '@vigil/gate';
import { observeConfigFromEnvironment, observeEnvironment } from '@vigil/observe';
import { ConfigError, sharedEnvironment } from '@vigil/platform';
import { loadGateConfig, loadObserveConfig, vigilEnvironment } from './config.ts';

/** The message of the ConfigError `load` throws. */
function configError(load: () => unknown): string {
  try {
    load();
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    return error.message;
  }
  assert.fail('the configuration was accepted');
}

describe('the one configuration schema', () => {
  test('docs/deploy.md documents every environment variable of the one schema', () => {
    const guide = readFileSync(new URL('../../../docs/deploy.md', import.meta.url), 'utf8');
    const missing = Object.keys(vigilEnvironment.shape).filter((name) => !guide.includes(`\`${name}\``));
    assert.deepEqual(missing, [], 'variables missing from docs/deploy.md');
  });

  test('is the shared settings plus each service slice, no variable in two of them', () => {
    const slices = [sharedEnvironment, observeEnvironment, gateEnvironment].map((slice) => Object.keys(slice.shape));
    const all = slices.flat();
    assert.equal(new Set(all).size, all.length, 'a variable is defined by two slices');
    assert.deepEqual(Object.keys(vigilEnvironment.shape).sort(), [...all].sort());
    for (const name of ['DATABASE_URL', 'LOG_LEVEL', 'OBSERVE_PORT', 'GATE_PORT']) assert.ok(slices[0]!.includes(name), name);
    for (const name of ['LLM_PROVIDER', 'MEMORY_ENABLED', 'EMBEDDINGS_URL', 'MODEL_PRICES']) assert.ok(slices[1]!.includes(name), name);
    for (const name of ['GATE_CACHE_REFRESH_MS', 'REDIS_URL', 'GATE_ADMIN_KEY', 'EXPIRY_SCAN_INTERVAL_MS']) assert.ok(slices[2]!.includes(name), name);
  });

  test('a start reports every bad variable of every slice at once, one line each', () => {
    const env = {
      OBSERVE_PORT: 'not-a-port',
      DATABASE_URL: 'mysql://db/vigil',
      LLM_PROVIDER: 'mistral',
      GATE_ADMIN_KEY: 'short',
      REDIS_URL: 'http://cache:6379',
    };
    for (const load of [() => loadObserveConfig(env), () => loadGateConfig(env)]) {
      const message = configError(load);
      const lines = message.split('\n');
      assert.equal(lines[0], 'Invalid configuration:');
      assert.equal(lines.length, 6, message);
      assert.ok(
        lines.some((line) => line.startsWith('  OBSERVE_PORT: ')),
        message,
      );
      assert.ok(lines.includes('  DATABASE_URL: must be a postgres:// or postgresql:// URL'), message);
      assert.ok(
        lines.some((line) => line.startsWith('  LLM_PROVIDER: ')),
        message,
      );
      assert.ok(lines.includes('  GATE_ADMIN_KEY: must be at least 16 characters'), message);
      assert.ok(lines.includes('  REDIS_URL: must be a redis:// or rediss:// URL'), message);
    }
  });

  test('a rule across variables of a slice is checked once every variable is valid', () => {
    assert.equal(
      configError(() => loadGateConfig({ MEMORY_ENABLED: 'true' })),
      'Invalid configuration:\n  MEMORY_API_URL: required when MEMORY_ENABLED=true',
    );
    assert.equal(
      configError(() => observeConfigFromEnvironment({ MEMORY_ENABLED: 'yes' })),
      'Invalid configuration:\n  MEMORY_API_URL: required when MEMORY_ENABLED=true',
    );
    const both = configError(() => loadObserveConfig({ MEMORY_ENABLED: 'true', GATE_CACHE_REFRESH_MS: '-1' }));
    assert.match(both, /^Invalid configuration:\n {2}GATE_CACHE_REFRESH_MS: /);
    assert.doesNotMatch(both, /MEMORY_API_URL/);
  });

  test("each service's configuration is the same whether the CLI or the service reads the environment", () => {
    const env = {
      HOST: '127.0.0.1',
      GATE_PORT: '3999',
      DATABASE_URL: 'postgres://db/vigil',
      LLM_PROVIDER: 'anthropic',
      LLM_API_KEY: 'k',
      GATE_CACHE_REFRESH_MS: '250',
      OBSERVE_URL: 'http://127.0.0.1:3400',
      INTERNAL_SERVICE_TOKEN: 'a-service-token-0123',
    };
    const overrides = { port: 0, dataDir: '/tmp/vigil-config-test' };
    const observe = loadObserveConfig(env, overrides);
    assert.deepEqual(observe, observeConfigFromEnvironment(env, overrides));
    assert.equal(observe.port, 0);
    assert.equal(observe.gateUrl, 'http://127.0.0.1:3999');
    assert.deepEqual(observe.database, { kind: 'postgres', url: 'postgres://db/vigil', schema: 'observe', poolMax: 10, connectTimeoutMs: 5000 });
    assert.equal(observe.judge.provider, 'anthropic');
    const gate = loadGateConfig(env, overrides);
    assert.deepEqual(gate, gateConfigFromEnvironment(env, overrides));
    assert.equal(gate.cacheRefreshMs, 250);
    assert.equal(gate.database.kind === 'postgres' && gate.database.schema, 'gate');
    assert.deepEqual(gate.observe, { url: 'http://127.0.0.1:3400', webhookSecret: undefined, serviceToken: 'a-service-token-0123' });
  });
});

describe('the documented defaults', () => {
  test('ports 3400 and 3000; webhooks 5000 ms, 3 attempts, scanned every 30 s; expiry every 5 s; alerts every 60 s', () => {
    const observe = loadObserveConfig({});
    assert.equal(observe.port, 3400);
    assert.equal(observe.alertEvalIntervalMs, 60_000);
    const gate = loadGateConfig({});
    assert.equal(gate.port, 3000);
    assert.deepEqual(gate.webhooks, { timeoutMs: 5000, maxAttempts: 3, scanIntervalMs: 30_000 });
    assert.equal(gate.expiryScanIntervalMs, 5000);
  });
});
