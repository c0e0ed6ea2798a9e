// The kernel names no feature (docs/architecture.md, Rules): no identifier or string of
// packages/platform/src names a feature of observe or the gate. dependency-cruiser sees imports
// only (platform-uses-no-service forbids those); this check reads the names. A feature is a folder
// of packages/observe/src or packages/gate/src, so a new feature is checked as soon as it exists.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

const ROOT = join(import.meta.dirname, '..');
const KERNEL = join(ROOT, 'packages/platform/src');

/**
 * Words of the kernel's own vocabulary that are also the name of a feature folder; each is used by
 * the kernel in its own sense, never as the service's feature. A word here is no longer checked, so
 * the list stays short and each entry says why.
 */
const KERNEL_WORDS: Record<string, string> = {
  request: 'an HTTP request (Fastify); the gate’s requests/ is the approval request',
  tree: 'the Merkle tree of the audit log; observe’s tree/ is the trace tree',
  'audit log': 'the kernel’s Merkle audit log (audit-log.ts), which each service’s audit-log/ wires up',
  mcp: 'the Model Context Protocol endpoint (mcp.ts: Streamable HTTP, tools as calls of routes), which each service’s mcp/ gives its tools',
  auth: 'a route’s authentication policy (route config `auth`), a kernel concept of the HTTP app',
  stream: 'Node streams (the log stream); observe’s stream/ is the live event stream',
  system: 'the system clock and the system actor of a change',
  'evidence pack':
    'the pack whose manifest digest the kernel’s audit key signs (audit-routes.ts, POST /api/audit/evidence-signature), never its contents; observe’s evidence-pack/ assembles the pack',
  erasure:
    'an erasure leaf of the audit log (audit-walk.ts): a signed leaf that accounts for items whose content was replaced, carried in bundles as tombstones are; observe’s erasure/ erases a data subject and writes such leaves',
};

/**
 * Single tokens that contain a feature's name in a sense of their own (exact text, not a word:
 * anything else with the word is still checked).
 */
const KERNEL_TOKENS: Record<string, string> = {
  'user-agent': 'the HTTP header',
  'x-vigil-event': 'the header of the audit log’s witness deliveries',
  checkpointEvents: 'leaves appended between audit-log checkpoints (AUDIT_CHECKPOINT_EVENTS)',
  AUDIT_CHECKPOINT_EVENTS: 'the variable of checkpointEvents',
  'temp_store = MEMORY': 'a SQLite pragma',
  sessionIdGenerator: 'the MCP SDK transport’s option (none: the /mcp endpoint is stateless)',
  'text/event-stream': 'the media type of server-sent events, which an MCP Streamable HTTP client accepts',
  REDACTION_RULES_FILE: 'the variable of the masking file (masking.ts), named for what operators call it',
  REDACTION_DETECTORS: 'the variable of the built-in masking detectors (masking.ts)',
  REDACTION_HMAC_KEY: 'the variable of the masking markers’ HMAC key (masking.ts)',
  ") values ('optimize')": 'the SQLite FTS5 command that merges an index into one segment (compactFullTextIndex)',
  'select pg_last_wal_replay_lsn()::text as lsn': 'PostgreSQL’s WAL replay position of a standby (read-replica.ts)',
  "select pg_last_wal_replay_lsn() >= '": 'the same, compared in the replica tests (replica-pair.ts)',
  'select pg_wal_replay_pause()': 'PostgreSQL’s pause of a standby’s WAL replay (replica-pair.ts)',
  'select pg_wal_replay_resume()': 'its resumption',
};

function folders(dir: string): string[] {
  return readdirSync(dir).filter((name) => statSync(join(dir, name)).isDirectory());
}

/** Every feature folder name of both services. */
function featureNames(): string[] {
  return [...new Set([...folders(join(ROOT, 'packages/observe/src')), ...folders(join(ROOT, 'packages/gate/src'))])].sort();
}

/** Lower-case words of a text: camelCase, snake_case, kebab-case and prose split alike, each made singular. */
function words(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '')
    .map((word) => (word.endsWith('ies') ? `${word.slice(0, -3)}y` : word.endsWith('s') && !word.endsWith('ss') ? word.slice(0, -1) : word));
}

function contains(haystack: readonly string[], needle: readonly string[]): boolean {
  for (let start = 0; start + needle.length <= haystack.length; start++) {
    if (needle.every((word, offset) => haystack[start + offset] === word)) return true;
  }
  return false;
}

interface FeatureName {
  line: number;
  feature: string;
  text: string;
}

/**
 * The feature names in a source text's identifiers and strings (comments are prose, not checked):
 * a feature matches a token holding its words in order, singular or plural (`policies` matches
 * `'policy'`, `alerts` matches `'alert_rule'`, `webhook-ingest` matches `webhookIngest`).
 */
function featureNamesIn(source: string, features: readonly string[], fileName = 'source.ts'): FeatureName[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const allowed = new Set(Object.keys(KERNEL_WORDS).map((word) => words(word).join(' ')));
  const checked = features.map((feature) => ({ feature, words: words(feature) })).filter((feature) => !allowed.has(feature.words.join(' ')));
  const found: FeatureName[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node) || ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) {
      const text = node.text;
      if (!(text in KERNEL_TOKENS)) {
        const tokenWords = words(text);
        for (const feature of checked) {
          if (contains(tokenWords, feature.words))
            found.push({ line: file.getLineAndCharacterOfPosition(node.getStart()).line + 1, feature: feature.feature, text });
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function kernelFiles(dir: string, found: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) kernelFiles(path, found);
    else if (/\.(ts|mts|mjs|js)$/.test(name) && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')) found.push(path);
  }
  return found;
}

test('the kernel (packages/platform/src, tests aside) names no feature of observe or the gate in an identifier or a string', () => {
  const features = featureNames();
  assert.ok(features.includes('policies') && features.includes('sessions'), `the features are read from the folders: ${features.join(', ')}`);
  const problems = kernelFiles(KERNEL).flatMap((path) =>
    featureNamesIn(readFileSync(path, 'utf8'), features, path).map(
      (name) => `${relative(ROOT, path)}:${name.line} names the feature ${name.feature} (${JSON.stringify(name.text)}): make it a parameter the service passes`,
    ),
  );
  assert.deepEqual(problems, []);
});

test('the check finds a feature named in an identifier, a string, a path or a template, and passes comments and kernel words', () => {
  const source = [
    "export const RESOURCES = ['policy', 'api_key', 'alert_rule'];",
    'const sessionsFeature = 1;',
    'app.get(`/api/guardrails/${id}`, handler);',
    "const header = 'x-webhook-ingest-signature';",
    '// policies, sessions and webhooks named in a comment are prose',
    'function onRequest(request: FastifyRequest) { return request.headers["user-agent"]; }',
  ].join('\n');
  const features = ['alerts', 'guardrails', 'policies', 'requests', 'sessions', 'webhook-ingest', 'agents'];
  assert.deepEqual(
    featureNamesIn(source, features).map((name) => `${name.line} ${name.feature} ${name.text}`),
    ['1 policies policy', '1 alerts alert_rule', '2 sessions sessionsFeature', '3 guardrails /api/guardrails/', '4 webhook-ingest x-webhook-ingest-signature'],
  );
});
