// Prints the top allocation sites of a .heapprofile (bench/heap-sampling.mjs): self bytes per
// function (name, file:line), and the same grouped by the nearest frame in the workspace's own code.
// Usage: node bench/heap-top.mjs <file.heapprofile> [count]
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

const [file, countArg] = process.argv.slice(2);
const count = Number(countArg ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const self = new Map();
const owned = new Map();
let total = 0;
// Frames of the compiled bundle are mapped back to their source file and line (its .map files).
const maps = new Map();
function sourceOf(frame) {
  if (!frame.url.startsWith('file://')) return null;
  if (!maps.has(frame.url)) {
    const path = `${fileURLToPath(frame.url)}.map`;
    maps.set(frame.url, existsSync(path) ? new SourceMap(JSON.parse(readFileSync(path, 'utf8'))) : null);
  }
  const entry = maps.get(frame.url)?.findEntry(frame.lineNumber, frame.columnNumber);
  return entry?.originalSource ? `${entry.originalSource.replace(/^.*\/(node_modules|packages)\//, '$1/')}:${entry.originalLine + 1}` : null;
}
const label = (frame) =>
  `${frame.functionName || '(anonymous)'} ${sourceOf(frame) ?? `${frame.url.replace(/^.*\/(node_modules|packages|dist)\//, '$1/')}:${frame.lineNumber + 1}`}`;
const ours = (frame) => /packages\/cli\/dist\//.test(frame.url) && /^(\.\.\/)+(platform|observe|gate|cli)\//.test(sourceOf(frame) ?? '');
function walk(node, stack) {
  const bytes = node.selfSize;
  const here = [...stack, node.callFrame];
  if (bytes > 0) {
    total += bytes;
    const key = label(node.callFrame);
    self.set(key, (self.get(key) ?? 0) + bytes);
    const mine = [...here].reverse().find(ours);
    const ownKey = mine ? label(mine) : '(no workspace frame)';
    owned.set(ownKey, (owned.get(ownKey) ?? 0) + bytes);
  }
  for (const child of node.children) walk(child, here);
}
walk(profile.head, []);
const print = (title, map) => {
  console.log(`\n${title} (total ${(total / 1048576).toFixed(0)} MiB sampled)`);
  for (const [key, bytes] of [...map].sort((a, b) => b[1] - a[1]).slice(0, count))
    console.log(`${((bytes / total) * 100).toFixed(1).padStart(5)} %  ${(bytes / 1048576).toFixed(0).padStart(6)} MiB  ${key}`);
};
print('self', self);
print('by nearest workspace frame', owned);
