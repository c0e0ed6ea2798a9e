// typescript-eslint with type information: the mistakes the compiler lets through that an async
// server cannot afford (a promise nobody awaits, a promise where a callback's result is ignored),
// exhaustive switches and unused variables. Formatting is Prettier's (npm run format).
// `npm run lint` caches each file's result (node_modules/.cache/eslint, by content): a change that breaks
// the types another, unchanged file relies on shows there when that file changes or the cache is
// removed; CI starts without the cache.
import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      'packages/*/.dist-*/**',
      'packages/sdk/src/generated/**',
      'scripts/depcheck-fixtures/**',
      'python/**',
      'data/**',
      '**/*.js',
      '**/*.mjs',
      '**/*.cjs',
    ],
  },
  {
    files: ['**/*.ts', '**/*.tsx'],
    extends: [tseslint.configs.base],
    languageOptions: {
      parserOptions: {
        // Files outside both tsconfigs (examples, the dashboard's Vite config) get a default project.
        projectService: { allowDefaultProject: ['packages/dashboard/vite.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // node:test's test() and describe() return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
    },
  },
  {
    // The services' run-time code formats and sorts without Intl: the first toLocaleString or Intl
    // formatter of a process maps about 5 MiB of the node binary's ICU data into its RSS, the first
    // localeCompare about 2 (groupedInteger, compareCodeUnits instead;
    // docs/decisions/0001-service-memory.md). Tests and their helpers may compare against them.
    files: ['packages/{platform,observe,gate,pricing}/src/**/*.ts'],
    ignores: ['**/*.test.ts', '**/*testing*.ts', '**/*fixture*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { property: 'toLocaleString', message: 'Maps ICU data into the service’s RSS: use groupedInteger (@vigil/platform).' },
        { object: 'Intl', message: 'Maps ICU data into the service’s RSS.' },
        {
          property: 'localeCompare',
          message: 'Orders by the host’s locale and ICU version, and maps ICU data into the service’s RSS: use compareCodeUnits (@vigil/platform).',
        },
      ],
    },
  },
  {
    // The Rules of React on the dashboard: hooks called unconditionally, effects naming what they read,
    // no state set or ref read during render.
    files: ['packages/dashboard/src/**/*.{ts,tsx}'],
    extends: [reactHooks.configs.flat.recommended],
  },
);
