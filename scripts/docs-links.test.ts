// Every relative link of the Markdown files reaches its file, and its `#anchor` a heading there:
// the site build checks only that linked pages exist, and the README, CONTRIBUTING and the
// packages' READMEs are not part of the site. Anchors are GitHub's, which the site uses too.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { githubSlug } from './docs-slug.ts';

const root = join(import.meta.dirname, '..');

function markdownFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') return [];
      const path = `${dir}/${entry.name}`;
      return entry.isDirectory() ? walk(path) : entry.name.endsWith('.md') ? [path] : [];
    });
  const top = ['README.md', 'CONTRIBUTING.md', 'SECURITY.md', 'python/README.md'];
  const packages = readdirSync(join(root, 'packages')).map((name) => `packages/${name}/README.md`);
  return [...top, ...packages, ...walk('docs')].filter((path) => existsSync(join(root, path)));
}

/** The text outside fenced code blocks and inline code spans. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1\s*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The anchors of a Markdown file: its headings' slugs (repeats numbered -1, -2 …), `{#custom}` ids and `<a id>` elements. */
export function anchors(text: string): Set<string> {
  const found = new Set<string>();
  const seen = new Map<string, number>();
  const outsideCode = text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1\s*$/gm, '');
  for (const [, heading] of outsideCode.matchAll(/^#{1,6}\s+(.*?)\s*#*\s*$/gm)) {
    const custom = /\{#([^}]+)\}\s*$/.exec(heading!);
    if (custom !== null) {
      found.add(custom[1]!);
      continue;
    }
    const plain = heading!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '');
    const base = githubSlug(plain);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const [, id] of text.matchAll(/<a id="([^"]+)"/g)) found.add(id!);
  return found;
}

test("slugs and anchors are GitHub's (the site's too)", () => {
  assert.equal(githubSlug('What runs: compiled JavaScript'), 'what-runs-compiled-javascript');
  assert.equal(githubSlug('vigil verify'), 'vigil-verify');
  assert.equal(githubSlug('--deep'), '--deep');
  assert.equal(githubSlug("The gate's audit log"), 'the-gates-audit-log');
  assert.equal(githubSlug('Gate → observe forwarding'), 'gate--observe-forwarding');
  assert.deepEqual(
    [...anchors('# A\n## Audit\n```\n# not a heading\n```\n## Audit\n#### createApiKey {#gate-createapikey}\n<a id="x"></a>')],
    ['a', 'audit', 'audit-1', 'gate-createapikey', 'x'],
  );
});

test('every relative link of the Markdown files reaches a file, and every #anchor a heading of it', () => {
  const problems: string[] = [];
  const anchorsOf = new Map<string, Set<string>>();
  for (const file of markdownFiles()) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^[a-z][a-z+.-]*:/i.test(target!)) continue; // https:, mailto: …
      const [pathPart, anchor] = target!.split('#') as [string, string | undefined];
      const path = pathPart === '' ? file : relative(root, join(root, dirname(file), decodeURIComponent(pathPart)));
      if (!existsSync(join(root, path))) {
        problems.push(`${file}: ${target} does not exist`);
        continue;
      }
      if (anchor === undefined || anchor === '' || !path.endsWith('.md') || statSync(join(root, path)).isDirectory()) continue;
      if (!anchorsOf.has(path)) anchorsOf.set(path, anchors(readFileSync(join(root, path), 'utf8')));
      if (!anchorsOf.get(path)!.has(anchor)) problems.push(`${file}: ${target} names no heading of ${path}`);
    }
  }
  assert.deepEqual(problems, []);
});
