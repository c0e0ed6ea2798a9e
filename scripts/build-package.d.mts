/** Types of build-package.mjs (plain JavaScript: it runs before anything is compiled). */
export declare function packageBuildState(packageDir: string): 'missing' | 'stale' | 'fresh';
