/** Types of build-lock.mjs (plain JavaScript: build.mjs uses it before anything is compiled). */
export declare function acquireBuildLock(lock: string, options: { waitMs: number; pollMs: number; what: string }): Promise<() => void>;
