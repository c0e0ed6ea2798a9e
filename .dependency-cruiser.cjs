// The import rules of docs/architecture.md (Rules, "Checked boundaries"), checked on every `npm test`
// by scripts/depcheck.test.ts, which also proves on scripts/depcheck-fixtures/ that each rule
// catches what it names. Paths start with `(^|/)` so the same rules read the fixture tree.

/** Service packages: the kernel (platform) and the price table (pricing) use none of them. */
const SERVICE = '(^|/)packages/(observe|gate|sdk|cli|dashboard)/';
/** Files a feature of observe or gate may import from its service's src root. */
const SRC_ROOT_SHARED = '(context|errors|schema|bounds|operations|migrations|config|notifications)\\.ts$';
/** Test kits: shared test setup, harnesses and fixtures, meant for tests only. */
const TEST_KIT = '(^|/)(testing|[^/]*-harness|[^/]*fixtures?|[^/]*testkit|[^/]*-scenarios)\\.ts$';
/** Dev tooling that builds the real apps to write the SDK's generated OpenAPI types. */
const CODEGEN = '(^|/)packages/sdk/(src/codegen|scripts)/';
const TEST = '\\.test\\.tsx?$';

/** @type {import('dependency-cruiser').IConfiguration} */
/**
 * A rule that files under observe's or the gate's src/`from` import nothing of their own service but
 * what `allowed` names (paths below that service's src/; in `from`, the service is $2 and a group of
 * `from` is $3).
 */
function importsOfItsServiceOnly(name, comment, from, allowed) {
  return {
    name,
    comment,
    severity: 'error',
    from: { path: `(^|/)packages/(observe|gate)/src/${from}` },
    to: { path: '(^|/)packages/$2/src/', pathNot: allowed.map((path) => `(^|/)packages/$2/src/${path}`) },
  };
}

module.exports = {
  forbidden: [
    {
      name: 'platform-uses-no-service',
      comment: 'The kernel knows no feature: packages/platform imports no service package.',
      severity: 'error',
      from: { path: '(^|/)packages/platform/' },
      to: { path: SERVICE },
    },
    {
      name: 'pricing-uses-no-package',
      comment: 'The price table is shared by observe and the SDK, so it depends on neither (nor on the kernel).',
      severity: 'error',
      from: { path: '(^|/)packages/pricing/' },
      to: { path: '(^|/)packages/', pathNot: '(^|/)packages/pricing/' },
    },
    {
      name: 'services-use-not-each-other',
      comment:
        'observe and the gate talk over HTTP: neither imports the other, nor the SDK, the CLI or the dashboard (a test may start the other service through its test kit).',
      severity: 'error',
      from: { path: '(^|/)packages/(observe|gate)/', pathNot: [TEST, TEST_KIT] },
      to: { path: '(^|/)packages/(observe|gate|sdk|cli|dashboard)/', pathNot: '(^|/)packages/$2/' },
    },
    {
      name: 'sdk-runs-without-the-services',
      comment: 'The SDK runs in any JavaScript runtime: its product code uses no service, kernel, CLI or dashboard (its tests and codegen may).',
      severity: 'error',
      from: { path: '(^|/)packages/sdk/', pathNot: [TEST, TEST_KIT, CODEGEN] },
      to: { path: '(^|/)packages/(observe|gate|platform|cli|dashboard)/' },
    },
    {
      name: 'dashboard-uses-types-only',
      comment: "The dashboard takes only types from other packages (the SDK's generated API types), so no server or SDK code reaches its bundle.",
      severity: 'error',
      from: { path: '(^|/)packages/dashboard/' },
      to: { path: '(^|/)packages/', pathNot: '(^|/)packages/dashboard/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-cross-package-src',
      comment: 'A package reaches another only through its name and `exports`, never into its src/ by a relative path.',
      severity: 'error',
      from: { path: '(^|/)packages/([^/]+)/' },
      // A relative import is `local`; a package name that resolves through the workspace is `aliased` (or undetermined).
      to: { dependencyTypes: ['local'], dependencyTypesNot: ['aliased'], path: '(^|/)packages/[^/]+/', pathNot: '(^|/)packages/$2/' },
    },
    {
      name: 'feature-through-index',
      comment: "A feature uses another feature only through that feature's index.ts.",
      severity: 'error',
      from: { path: '(^|/)packages/(observe|gate)/src/([^/]+)/' },
      to: {
        path: '(^|/)packages/$2/src/[^/]+/',
        // A feature's test kit is not part of its index.ts; test-kit-only-in-tests keeps it to tests.
        pathNot: ['(^|/)packages/$2/src/$3/', '(^|/)packages/$2/src/[^/]+/index\\.ts$', TEST_KIT],
      },
    },
    {
      name: 'feature-uses-shared-src-root',
      comment:
        'Of its service src root, a feature uses only the shared files (context, errors, schema, bounds, operations, migrations, config, notifications); tests may use the test kit.',
      severity: 'error',
      from: { path: '(^|/)packages/(observe|gate)/src/[^/]+/', pathNot: [TEST, TEST_KIT] },
      to: { path: '(^|/)packages/$2/src/[^/]+\\.tsx?$', pathNot: `(^|/)packages/$2/src/${SRC_ROOT_SHARED}` },
    },
    {
      name: 'app-uses-feature-index',
      comment: "A service's app.ts, which builds it from its features, uses each only through the feature's index.ts.",
      severity: 'error',
      from: { path: '(^|/)packages/(observe|gate)/src/app\\.ts$' },
      to: { path: '(^|/)packages/$2/src/[^/]+/', pathNot: '(^|/)packages/$2/src/[^/]+/index\\.ts$' },
    },
    importsOfItsServiceOnly(
      'migration-history-imports-no-feature',
      "A service's frozen migration history (src/migration-history/) imports nothing of its service, no feature and not today's schema: only the platform, kysely, libraries, its own frozen copies and the service's stored formats (which never change), so a step keeps doing what it did when it shipped.",
      'migration-history/',
      ['migration-history/', 'stored-formats/index\\.ts$'],
    ),
    importsOfItsServiceOnly(
      'stored-formats-import-no-feature',
      "A service's stored formats (src/stored-formats/: what stored data was written with, never changed) import nothing else of the service, so the frozen history that uses them runs no feature code.",
      'stored-formats/',
      ['stored-formats/'],
    ),
    importsOfItsServiceOnly(
      'feature-migrations-use-no-other-feature',
      "A feature's migration steps (<feature>/migrations.ts) import no other feature's code, nor the service's src root: only their own feature, the frozen history's index.ts, the platform and libraries.",
      '([^/]+)/migrations\\.ts$',
      ['$3/', 'migration-history/index\\.ts$'],
    ),
    {
      name: 'migration-history-only-in-migrations',
      comment: "The frozen copies in the migration history serve migration steps only: live code runs the feature's own code.",
      severity: 'error',
      from: {
        path: '(^|/)packages/(observe|gate)/src/',
        pathNot: [
          '(^|/)packages/(observe|gate)/src/migrations\\.ts$',
          '(^|/)packages/(observe|gate)/src/[^/]+/migrations\\.ts$',
          '(^|/)packages/(observe|gate)/src/migration-history/',
        ],
      },
      to: { path: '(^|/)packages/$2/src/migration-history/' },
    },
    {
      name: 'no-runtime-cycle',
      comment: 'No cycle of imports that exist at run time (type-only imports are erased, so they may go both ways).',
      severity: 'error',
      from: {},
      to: {
        circular: true,
        dependencyTypesNot: ['type-only'],
        viaOnly: { dependencyTypesNot: ['type-only'] },
      },
    },
    {
      name: 'test-kit-only-in-tests',
      comment: 'Test kits (testing.ts, *-harness.ts, fixtures, scenarios) are used by tests, other test kits and the SDK codegen only.',
      severity: 'error',
      from: { pathNot: [TEST, TEST_KIT, CODEGEN] },
      to: { path: TEST_KIT },
    },
  ],
  options: {
    // The dashboard's bundle and the compiled CLI are not source, nor is any package's scratch
    // build folder (.dist-build-<pid>, which a concurrent build writes and deletes mid-cruise).
    // The SDK's and the price table's dist/ stay in: other packages import them through `exports`,
    // so the rules see them.
    exclude: { path: ['(^|/)packages/(dashboard|cli)/\\.?dist[^/]*/', '(^|/)packages/[^/]+/\\.dist-[^/]*/'] },
    doNotFollow: { path: 'node_modules' },
    // Type-only imports are seen (and tagged `type-only`), so the feature rules cover them too.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'node', 'default'],
      extensions: ['.ts', '.tsx', '.js', '.mjs'],
    },
  },
};
