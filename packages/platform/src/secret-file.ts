import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { dirname } from 'node:path';

/**
 * A secret kept in a file of the data directory: read when it exists, else created (mode 0600)
 * with `create()`. The secret is written whole to a private temporary file and then linked into
 * place: link() is atomic and fails when the name exists, so of instances starting at the same
 * moment on one directory the first link wins and no reader ever sees a half-written file.
 */
export function readOrCreateSecretFile(file: string, create: () => string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dirname(file), { recursive: true });
  const draft = `${file}.${randomUUID()}.tmp`;
  writeFileSync(draft, create(), { mode: 0o600, flag: 'wx' });
  try {
    linkSync(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(draft);
  }
  return readFileSync(file, 'utf8');
}
