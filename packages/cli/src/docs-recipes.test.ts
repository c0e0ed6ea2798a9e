/**
 * Recipes the docs give users to copy, run as written: the SQLite backup and the one-time
 * auto_vacuum conversion of docs/deploy.md from the repository's layout, and the webhook
 * receiver's signature check of docs/webhooks.md.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';

const root = resolve(import.meta.dirname, '../../..');
const dirs: string[] = [];
after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** The fenced block of `language` that follows `marker` in a doc. */
function blockAfter(doc: string, marker: string, language: string): string {
  const text = readFileSync(join(root, 'docs', doc), 'utf8');
  const from = text.indexOf(marker);
  assert.ok(from >= 0, `${doc} has "${marker}"`);
  const open = text.indexOf('```' + language + '\n', from);
  return text.slice(open + language.length + 4, text.indexOf('\n```', open));
}

test("docs/deploy.md's SQLite backup, run from a checkout's root while the databases are open in WAL mode, copies both", () => {
  const checkout = mkdtempSync(join(tmpdir(), 'vigil-backup-'));
  dirs.push(checkout);
  // The layout the recipe relies on: data/ from `npm start`, and the platform package with its dependencies.
  mkdirSync(join(checkout, 'packages'));
  symlinkSync(join(root, 'packages/platform'), join(checkout, 'packages/platform'));
  mkdirSync(join(checkout, 'data'));
  const Database = createRequire(join(root, 'packages/platform/package.json'))('better-sqlite3') as new (file: string) => {
    pragma(text: string): unknown;
    exec(sql: string): void;
    prepare(sql: string): { get(): unknown };
    close(): void;
  };
  const open = ['observe', 'gate'].map((name) => {
    const db = new Database(join(checkout, 'data', `${name}.db`));
    db.pragma('journal_mode = WAL');
    db.exec(`create table kept (name text); insert into kept values ('${name}')`);
    return db;
  });
  try {
    const recipe = blockAfter('deploy.md', 'From the repository root', 'bash')
      .split('\n')
      .filter((line) => !line.startsWith('#') && !line.startsWith('sqlite3 '))
      .join('\n');
    const out = execFileSync('bash', ['-euc', recipe], { cwd: checkout, encoding: 'utf8' });
    assert.match(out, /backed up/);
    const day = new Date().toISOString().slice(0, 10);
    for (const name of ['observe', 'gate']) {
      const copy = new Database(join(checkout, 'backups', `${name}-${day}.db`));
      assert.deepEqual(copy.prepare('select name from kept').get(), { name });
      copy.close();
    }
  } finally {
    for (const db of open) db.close();
  }
});

test("docs/deploy.md's one-time conversion of an older SQLite file to auto_vacuum=INCREMENTAL keeps the data and returns free pages", () => {
  const checkout = mkdtempSync(join(tmpdir(), 'vigil-vacuum-'));
  dirs.push(checkout);
  mkdirSync(join(checkout, 'packages'));
  symlinkSync(join(root, 'packages/platform'), join(checkout, 'packages/platform'));
  mkdirSync(join(checkout, 'data'));
  const Database = createRequire(join(root, 'packages/platform/package.json'))('better-sqlite3') as new (file: string) => {
    pragma(text: string, options?: { simple: boolean }): unknown;
    exec(sql: string): void;
    prepare(sql: string): { get(): unknown };
    close(): void;
  };
  // A file as an older version left it: auto_vacuum off, WAL mode, pages freed by deletes.
  const file = join(checkout, 'data', 'observe.db');
  const old = new Database(file);
  old.pragma('journal_mode = WAL');
  old.exec(`create table kept (name text); insert into kept values ('observe');
    create table gone (body text); with recursive n(i) as (select 1 union all select i + 1 from n where i < 500) insert into gone select hex(randomblob(2000)) from n;
    delete from gone`);
  assert.equal(old.pragma('auto_vacuum', { simple: true }), 0);
  assert.ok(Number(old.pragma('freelist_count', { simple: true })) > 0);
  old.close();

  const recipe = blockAfter('deploy.md', 'To convert it once', 'bash')
    .split('\n')
    .filter((line) => !line.startsWith('#') && !line.startsWith('sqlite3 '))
    .join('\n');
  const out = execFileSync('bash', ['-euc', recipe], { cwd: checkout, encoding: 'utf8' });
  assert.match(out, /converted/);
  assert.doesNotMatch(out, /not converted/);
  const converted = new Database(file);
  try {
    assert.equal(converted.pragma('auto_vacuum', { simple: true }), 2);
    assert.equal(converted.pragma('freelist_count', { simple: true }), 0);
    assert.deepEqual(converted.prepare('select name from kept').get(), { name: 'observe' });
  } finally {
    converted.close();
  }
});

test("docs/webhooks.md's hand-written signature check: true for a good signature, false (never a throw) for a missing, repeated or malformed header", async () => {
  const snippet = blockAfter('webhooks.md', "Without Vigil's code", 'js');
  const module = `${snippet.replace(/^import .*$/m, "import { createHmac, timingSafeEqual } from 'node:crypto';")}\nexport { ok };`;
  const check = async (signature: unknown, timestamp: string, rawBody: string, secret: string): Promise<boolean> => {
    const source = `const signature = ${JSON.stringify(signature)}, timestamp = ${JSON.stringify(timestamp)}, rawBody = ${JSON.stringify(rawBody)}, secret = ${JSON.stringify(secret)};\n${module}`;
    return ((await import(`data:text/javascript,${encodeURIComponent(source)}`)) as { ok: boolean }).ok;
  };
  const secret = 'whsec_test';
  const timestamp = String(Math.floor(Date.now() / 1000));
  const body = '{"event":"request.decided"}';
  const good = `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
  assert.equal(await check(good, timestamp, body, secret), true);
  // Same number of characters, more bytes: a naive length check then timingSafeEqual would throw.
  const multibyte = `sha256=${'é'.repeat(64)}`;
  for (const malformed of [undefined, '', 'sha256=', multibyte, [good, good], good.slice(0, -1)]) {
    assert.equal(await check(malformed, timestamp, body, secret), false, JSON.stringify(malformed));
  }
});
