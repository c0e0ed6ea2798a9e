/** Types of build-output.mjs (plain JavaScript: the builds use it before anything is compiled). */
export declare function replaceBuildOutput(scratch: string, dist: string, options: { last?: string[]; keepObsoleteMs: number }): string[];
export declare function filesUnder(dir: string): string[];
