// The boundaries of docs/architecture.md, enforced: the packages break none of the rules of
// .dependency-cruiser.cjs, and the rules catch each kind of break (scripts/depcheck-fixtures/).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { depcheck, describeViolation } from './depcheck.ts';

test('the packages keep every dependency rule', async () => {
  const violations = (await depcheck(['packages'])).map(describeViolation);
  assert.deepEqual(violations, [], `dependency rules broken (npm run depcheck lists them):\n${violations.join('\n')}`);
});

test('the rules catch a platform→service import, a service→service import, SDK code in the SDK or dashboard that needs a server, a cross-package src import, a feature-internal import, a runtime cycle, a test kit in product code, and migration steps that run feature code (frozen history importing a feature, a stored format importing a feature, the steps of a feature importing another feature) or live code that runs the frozen history', async () => {
  const fixture = 'scripts/depcheck-fixtures/packages';
  // The real packages a fixture imports by name are read, not followed.
  const violations = (await depcheck([fixture], { doNotFollow: ['node_modules', '^packages/'] })).map(describeViolation);
  const observe = `${fixture}/observe/src`;
  const policies = `${fixture}/gate/src/policies`;
  const expected = [
    `app-uses-feature-index: ${observe}/app.ts -> ${observe}/sessions/uses-errors.ts`,
    `dashboard-uses-types-only: ${fixture}/dashboard/src/uses-sdk-code.ts -> packages/sdk/dist/index.js`,
    `feature-migrations-use-no-other-feature: ${observe}/sessions/migrations.ts -> ${observe}/events/index.ts`,
    `feature-through-index: ${observe}/sessions/uses-events-inside.ts -> ${observe}/events/derive.ts`,
    `feature-uses-shared-src-root: ${observe}/sessions/uses-root-entry.ts -> ${observe}/index.ts`,
    `feature-uses-shared-src-root: ${policies}/uses-kit.ts -> ${fixture}/gate/src/testing.ts`,
    `migration-history-imports-no-feature: ${observe}/migration-history/steps.ts -> ${observe}/events/index.ts`,
    `migration-history-only-in-migrations: ${observe}/sessions/uses-history.ts -> ${observe}/migration-history/index.ts`,
    `no-cross-package-src: ${fixture}/sdk/src/reaches-into-observe.ts -> ${observe}/events/derive.ts`,
    `no-runtime-cycle: ${policies}/cycle-a.ts -> ${policies}/cycle-b.ts -> ${policies}/cycle-a.ts`,
    `platform-uses-no-service: ${fixture}/platform/src/uses-service.ts -> packages/observe/src/index.ts`,
    `pricing-uses-no-package: ${fixture}/pricing/src/uses-platform.ts -> packages/platform/src/index.ts`,
    `sdk-runs-without-the-services: ${fixture}/sdk/src/reaches-into-observe.ts -> ${observe}/events/derive.ts`,
    `sdk-runs-without-the-services: ${fixture}/sdk/src/runs-observe.ts -> packages/observe/src/index.ts`,
    `stored-formats-import-no-feature: ${observe}/stored-formats/index.ts -> ${observe}/events/index.ts`,
    `services-use-not-each-other: ${observe}/events/uses-gate.ts -> packages/gate/src/index.ts`,
    `test-kit-only-in-tests: ${policies}/uses-kit.ts -> ${fixture}/gate/src/testing.ts`,
  ];
  assert.deepEqual(
    violations,
    expected.sort((a, b) => a.localeCompare(b)),
  );
});
