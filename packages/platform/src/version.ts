import { createRequire } from 'node:module';

/** The release version, from the workspace root's package.json. */
export const VIGIL_VERSION: string = (createRequire(import.meta.url)('../../../package.json') as { version: string }).version;
