// Puts a finished build into its output folder without ever taking the folder, or a file in it, away
// from a process reading it meanwhile: used by the package builds (scripts/build-package.mjs) and
// the dashboard's (src/dashboard-build.ts). Plain JavaScript: it runs before anything is compiled.
import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';

/** Every file under `dir`, as a path relative to it with `/` separators. */
export function filesUnder(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'));
}

/**
 * Moves every file of `scratch` into `dist` with one rename each (a rename replaces a file at once:
 * a reader opens the old file or the new one, never no file), the files named in `last` (entry
 * points: a package's exports, the dashboard's index.html) after the rest, so a new entry point
 * never finds its modules missing. Files of earlier builds that this one does not have are then
 * removed once older than `keepObsoleteMs` (0: at once). Answers the files of this build.
 */
export function replaceBuildOutput(scratch, dist, { last = [], keepObsoleteMs }) {
  const files = filesUnder(scratch);
  const lastSet = new Set(last);
  const ordered = [...files.filter((file) => !lastSet.has(file)), ...files.filter((file) => lastSet.has(file))];
  for (const file of ordered) {
    mkdirSync(dirname(join(dist, file)), { recursive: true });
    renameSync(join(scratch, file), join(dist, file));
  }
  const built = new Set(files);
  for (const file of filesUnder(dist)) {
    const path = join(dist, file);
    if (!built.has(file) && Date.now() - statSync(path).mtimeMs >= keepObsoleteMs) rmSync(path, { force: true });
  }
  return files;
}
