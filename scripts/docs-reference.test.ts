import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { markdownText, referencePages, schemaType } from './docs-reference.ts';

const root = join(import.meta.dirname, '..');

/** Where two texts first differ, with a few lines of each (the pages are too long to print whole). */
function firstDifference(committed: string, generated: string): string {
  const a = committed.split('\n');
  const b = generated.split('\n');
  let line = 0;
  while (line < a.length && line < b.length && a[line] === b[line]) line++;
  const show = (lines: string[]) =>
    lines
      .slice(Math.max(0, line - 1), line + 3)
      .map((text, index) => `    ${Math.max(0, line - 1) + index + 1}: ${text}`)
      .join('\n');
  return `first difference at line ${line + 1}\n  committed:\n${show(a)}\n  from the code now:\n${show(b)}`;
}

test('docs/reference/{api,configuration,cli}.md are what the code gives now (regenerate: npm run docs:reference)', async () => {
  const pages = await referencePages();
  assert.deepEqual(Object.keys(pages).sort(), ['docs/reference/api.md', 'docs/reference/cli.md', 'docs/reference/configuration.md']);
  for (const [path, generated] of Object.entries(pages)) {
    const committed = readFileSync(join(root, path), 'utf8');
    if (committed !== generated) assert.fail(`${path} is stale: run \`npm run docs:reference\` and review the diff.\n${firstDifference(committed, generated)}`);
  }
  // What readers look for is there: an operation of each service, a variable of each slice, a subcommand's options.
  assert.match(pages['docs/reference/api.md']!, /#### ingestEvents \{#observe-ingestevents\}\n\n`POST \/api\/events`/);
  assert.match(pages['docs/reference/api.md']!, /#### decideRequest \{#gate-deciderequest\}/);
  assert.match(pages['docs/reference/configuration.md']!, /\| `DATABASE_URL` \| string \| — \| `postgres:\/\/…`/);
  assert.match(pages['docs/reference/configuration.md']!, /\| `RETENTION_DAYS` \| integer 0–… \| `0` \|/);
  assert.match(pages['docs/reference/configuration.md']!, /\| `GATE_ADMIN_KEY` \|/);
  assert.match(pages['docs/reference/cli.md']!, /## vigil eval-gate\n\n```text\nUsage: vigil eval-gate \[options\][\s\S]*--min-pass-rate/);
});

test('text from the code is escaped for a VitePress page outside code spans only', () => {
  assert.equal(markdownText('decidedBy is api:<key name> or `dashboard:<name>`'), 'decidedBy is api:&lt;key name&gt; or `dashboard:<name>`');
  assert.equal(markdownText('a | b\nand {{ x }}'), 'a \\| b and &#123;&#123; x }}');
});

test('schemas read as short types', () => {
  const components = {};
  assert.equal(schemaType({ type: 'string', minLength: 1, maxLength: 200 }, components), 'string 1–200');
  assert.equal(schemaType({ type: 'integer', exclusiveMinimum: 0, maximum: Number.MAX_SAFE_INTEGER }, components), 'integer 1–…');
  assert.equal(schemaType({ type: 'array', items: { type: 'string', enum: ['ingest', 'read'] } }, components), '("ingest" | "read")[]');
  assert.equal(schemaType({ $ref: '#/components/schemas/ApprovalRequest' }, components), 'ApprovalRequest');
  assert.equal(schemaType({ anyOf: [{ type: 'string' }, { type: 'null' }] }, components), 'string | null');
});
