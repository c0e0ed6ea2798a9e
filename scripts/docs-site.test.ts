// `npm test` builds the docs site: a page that links to a page that does not exist fails the
// build (VitePress's dead-link check, which docs/.vitepress/config.mjs keeps on), and so does a
// page VitePress cannot compile (an unescaped `<tag` or `{{` in Markdown is a Vue template error).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, test } from 'node:test';

const root = join(import.meta.dirname, '..');
const vitepress = join(root, 'node_modules/vitepress/bin/vitepress.js');
const scratch = mkdtempSync(join(tmpdir(), 'vigil-docs-site-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function build(srcDir: string, outDir: string): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [vitepress, 'build', srcDir, '--outDir', outDir], { cwd: root, encoding: 'utf8', env: { ...process.env, CI: '1' } });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

test('docs/ builds into the site, every internal link reaching a page', () => {
  const { status, output } = build('docs', join(scratch, 'site'));
  assert.equal(status, 0, output);
  assert.match(output, /build complete/);
});

test("the site's configuration fails the build on a dead link", () => {
  // A one-page site with the real configuration: the page links to a page that does not exist.
  const src = join(scratch, 'dead-link');
  mkdirSync(join(src, '.vitepress'), { recursive: true });
  // Imported by a relative path, so VitePress bundles it with what it imports (TypeScript included) as it does the real one.
  const config = relative(join(src, '.vitepress'), join(root, 'docs/.vitepress/config.mjs'));
  writeFileSync(join(src, '.vitepress', 'config.mjs'), `export { default } from ${JSON.stringify(config)};\n`);
  writeFileSync(join(src, 'index.md'), '# Home\n\nSee [the guide](guide/missing-page.md).\n');
  const { status, output } = build(src, join(scratch, 'dead-link-site'));
  assert.notEqual(status, 0, 'the build succeeded');
  assert.match(output, /dead link.*guide\/missing-page/);
});
