// The TypeScript examples of the docs compile against the workspace's packages as a user installs
// them (`@vigil/sdk` through its `exports` and built declarations): a renamed option, a changed
// signature or a removed export fails here, not in a reader's editor. Each ```ts block of the
// README, docs/ and the packages' READMEs is one module; the names a fragment takes as given (the
// client made in the block before, the reader's own tools) are declared once below.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

const root = join(import.meta.dirname, '..');
const blocksDir = join(root, 'docs', '.code-blocks');

/** What the guides' fragments use without making it: the reader's agent, as the quick start sets it up. */
const GIVEN = `
import type { VigilSession } from '@vigil/sdk';
import type { ObserveClient } from '@vigil/sdk/node';
declare global {
  /** The client the quick start's first block makes, and a session one of its fragments records into. */
  const vigil: ObserveClient;
  const session: VigilSession;
  /** The reader's own tools and data a fragment calls or sends. */
  const index: { search(query: string): Promise<string[]> };
  const search: (query: string) => Promise<string[]>;
  const payments: { refund(orderId: string, amount: number): Promise<{ refundId: string }> };
  const chain: { invoke(input: { question: string }, options?: { callbacks?: unknown[] }): Promise<unknown> };
  const weather: import('ai').Tool;
  const pay: (args: { amount: number; to: string }) => Promise<unknown>;
  /** The reader's own store of suspended runs, and the key a run is stored under. */
  const db: { save(key: string, value: string): Promise<void>; load(key: string): Promise<string> };
  const runId: string;
  const orderId: string, amount: number, question: string, q: string, key: string, paymentId: string;
  const completion: string, inputTokens: number, outputTokens: number;
  /** A conversation: an empty array type fits every provider's message list. */
  const messages: never[];
  /** A webhook delivery as a Node HTTP server receives it. */
  const rawBody: string;
  const req: import('node:http').IncomingMessage;
}
export {};
`;

/** Markdown files whose examples are checked: the README, every page of docs/, the packages' READMEs. */
function documents(): string[] {
  const pages = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') return [];
      const path = `${dir}/${entry.name}`;
      return entry.isDirectory() ? pages(path) : entry.name.endsWith('.md') ? [path] : [];
    });
  const packageReadmes = readdirSync(join(root, 'packages'))
    .map((name) => `packages/${name}/README.md`)
    .filter((path) => {
      try {
        readFileSync(join(root, path));
        return true;
      } catch {
        return false;
      }
    });
  return ['README.md', ...pages('docs'), ...packageReadmes];
}

interface Block {
  doc: string;
  /** 1-based line of the block's first code line in its document. */
  line: number;
  code: string;
}

/** The ```ts / ```typescript blocks of a Markdown text. */
export function typeScriptBlocks(doc: string, text: string): Block[] {
  const blocks: Block[] = [];
  for (const match of text.matchAll(/^```(?:ts|typescript)\b[^\n]*\n([\s\S]*?)^```/gm)) {
    blocks.push({ doc, line: text.slice(0, match.index).split('\n').length + 1, code: match[1]! });
  }
  return blocks;
}

test('the block extraction finds ts and typescript blocks with their line, and nothing else', () => {
  const text = 'intro\n```ts\nconst a = 1;\n```\n```js\nno\n```\n\n```typescript {2}\nconst b = 2;\n```\n';
  assert.deepEqual(typeScriptBlocks('x.md', text), [
    { doc: 'x.md', line: 3, code: 'const a = 1;\n' },
    { doc: 'x.md', line: 10, code: 'const b = 2;\n' },
  ]);
});

test('every TypeScript example of the docs compiles against the workspace packages', () => {
  const blocks = documents().flatMap((doc) => typeScriptBlocks(doc, readFileSync(join(root, doc), 'utf8')));
  assert.ok(blocks.length >= 10, `found ${blocks.length} blocks`);
  const files = new Map<string, Block>();
  blocks.forEach((block, index) => files.set(join(blocksDir, `${block.doc.replace(/[^A-Za-z0-9]+/g, '-')}-${index}.ts`), block));
  const given = join(blocksDir, 'given.ts');
  const sources = new Map([...files].map(([file, block]) => [file, `${block.code}\nexport {};\n`]));
  sources.set(given, GIVEN);

  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    esModuleInterop: true,
    // A block may import a workspace package whose source is TypeScript (the gate's signature check).
    allowImportingTsExtensions: true,
    types: ['node'],
  };
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (file) => sources.has(file) || fileExists(file);
  host.readFile = (file) => sources.get(file) ?? readFile(file);
  host.getSourceFile = (file, language, ...rest) => {
    const text = sources.get(file);
    return text === undefined ? getSourceFile(file, language, ...rest) : ts.createSourceFile(file, text, language, true);
  };
  const program = ts.createProgram([...sources.keys()], options, host);
  const problems = ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const block = diagnostic.file === undefined ? undefined : files.get(diagnostic.file.fileName);
    if (diagnostic.file === undefined || block === undefined) return `${diagnostic.file ? relative(root, diagnostic.file.fileName) : 'compiler'}: ${message}`;
    const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    return `${block.doc}:${block.line + line}: ${message}`;
  });
  assert.deepEqual(problems, []);
});
