import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * A secret kept in a file of the data directory: read when it exists, else created (mode 0600)
 * with `create()`. A service or instance starting at the same moment on the same directory keeps
 * the file written first ('wx'), so every reader ends with the same secret.
 */
export function readOrCreateSecretFile(file: string, create: () => string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dirname(file), { recursive: true });
  try {
    writeFileSync(file, create(), { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return readFileSync(file, 'utf8');
}
