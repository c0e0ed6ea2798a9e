// build-output.mjs: a finished build moved into its output folder without the folder ever going.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { filesUnder, replaceBuildOutput } from '../build-output.mjs';

const dir = mkdtempSync(join(tmpdir(), 'vigil-build-output-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function write(root: string, files: Record<string, string>): void {
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  }
}

test('the new files replace the old in the same folder; files the build no longer makes go once older than keepObsoleteMs', () => {
  const dist = join(dir, 'dist');
  write(dist, { 'index.js': 'old', 'gone.js': 'old', 'assets/old-asset.js': 'old' });
  const folder = statSync(dist).ino;
  // An asset of the earlier build, written two days ago: past the one day kept.
  const twoDaysAgo = new Date(Date.now() - 2 * 24 * 3600_000);
  utimesSync(join(dist, 'assets/old-asset.js'), twoDaysAgo, twoDaysAgo);

  const scratch = join(dir, 'scratch');
  write(scratch, { 'index.js': 'new', 'assets/new-asset.js': 'new' });
  const files = replaceBuildOutput(scratch, dist, { last: ['index.js'], keepObsoleteMs: 24 * 3600_000 });

  assert.deepEqual(files.sort(), ['assets/new-asset.js', 'index.js']);
  assert.equal(statSync(dist).ino, folder, 'dist/ is the same folder, never replaced');
  assert.equal(readFileSync(join(dist, 'index.js'), 'utf8'), 'new');
  assert.deepEqual(filesUnder(dist).sort(), ['assets/new-asset.js', 'gone.js', 'index.js'], 'gone.js is younger than a day, old-asset.js is not');
  assert.deepEqual(filesUnder(scratch), [], 'every file was moved');

  write(scratch, { 'index.js': 'newer' });
  replaceBuildOutput(scratch, dist, { keepObsoleteMs: 0 });
  assert.deepEqual(filesUnder(dist), ['index.js'], 'with keepObsoleteMs 0, nothing of earlier builds stays');
});
