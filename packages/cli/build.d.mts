/** Types of build.mjs (plain JavaScript: it runs before anything is compiled). */
export declare const DIST_DIR: string;
export type BuildState = 'missing' | 'stale' | 'fresh';
export declare function buildState(dist?: string, root?: string): BuildState;
export declare function buildServices(dist?: string): Promise<{ ms: number }>;
export declare function compiledEntry(dist?: string): Promise<string>;
