import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
/** The README and every page of docs/, its folders included (guide/, reference/, decisions/). */
const guides = [
  'README.md',
  ...readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md') && !name.split('/').some((part) => part.startsWith('.')))
    .map((name) => `docs/${name}`),
];

/** Every source file of the repository, as a path from its root. */
function sourceFiles(dir = ''): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory()) return ['node_modules', 'dist', '.git', 'data'].includes(entry.name) ? [] : sourceFiles(path);
    return /\.(ts|tsx|mjs)$/.test(entry.name) ? [path] : [];
  });
}

test('every source file the docs name exists, and so does every `file.ts#name` and `Class.method` they point at', () => {
  const files = sourceFiles();
  // `events/ingest.ts` names packages/observe/src/events/ingest.ts: a path matches when it ends the file's path (src/ may be left out).
  const resolve = (mention: string) =>
    files.filter((file) => file.endsWith(`/${mention}`) || file === mention || file.replace('/src/', '/').endsWith(`/${mention}`));
  const problems: string[] = [];
  for (const guide of guides) {
    const text = readFileSync(join(root, guide), 'utf8');
    for (const [, mention, symbol] of text.matchAll(/`([\w./-]+\.(?:ts|tsx|mjs))(?:#(\w+))?`/g)) {
      if (mention!.includes('*')) continue;
      const found = resolve(mention!);
      if (found.length === 0) problems.push(`${guide}: ${mention} does not exist`);
      else if (symbol !== undefined && !found.some((file) => new RegExp(`\\b${symbol}\\b`).test(readFileSync(join(root, file), 'utf8')))) {
        problems.push(`${guide}: ${mention} has no ${symbol}`);
      }
    }
    for (const [, owner, member] of text.matchAll(/`([A-Z][A-Za-z0-9]+)\.([a-z][A-Za-z0-9]*)(?:\(\))?`/g)) {
      if (owner! in globalThis) continue; // JSON.stringify and the like
      const declared = files.some((file) => {
        const source = readFileSync(join(root, file), 'utf8');
        return new RegExp(`(class|interface) ${owner}\\b`).test(source) && new RegExp(`\\b${member}\\b`).test(source);
      });
      if (!declared) problems.push(`${guide}: ${owner}.${member} is not in the code`);
    }
  }
  assert.deepEqual(problems, []);
});
