// Spectral (the repository's .spectral.yaml: spectral:oas and the OWASP API ruleset, exceptions
// reviewed in docs/openapi-lint.md) on the OpenAPI documents the real services serve. The CLI and
// both rulesets come from node_modules: nothing is fetched while it runs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CHAT_CONFIGURED_ENV } from '@vigil/gate/testing';
import { loadOpenApiDocuments } from './codegen/openapi.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const SPECTRAL = join(ROOT, 'node_modules', '.bin', 'spectral');

interface SpectralResult {
  code: string;
  message: string;
  severity: number;
  source: string;
  path: string[];
}

test('both services’ OpenAPI documents pass Spectral with no error, warning or hint', async () => {
  // The gate with a chat platform configured, so that its chat interaction routes are linted too.
  const documents = await loadOpenApiDocuments(CHAT_CONFIGURED_ENV);
  const dir = mkdtempSync(join(tmpdir(), 'vigil-openapi-lint-'));
  try {
    const files = Object.entries(documents).map(([service, document]) => {
      const file = join(dir, `${service}.json`);
      writeFileSync(file, JSON.stringify(document, null, 2));
      return file;
    });
    const run = spawnSync(SPECTRAL, ['lint', '--ruleset', join(ROOT, '.spectral.yaml'), '--format', 'json', '--quiet', '--fail-severity', 'hint', ...files], {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, NO_COLOR: '1' },
    });
    assert.equal(run.error, undefined, `spectral could not run: ${String(run.error)}`);
    const findings = (JSON.parse(run.stdout || '[]') as SpectralResult[]).map(
      (result) => `${result.source.replace(`${dir}/`, '')} ${result.path.join('.')}: ${result.code}: ${result.message}`,
    );
    assert.deepEqual(findings, [], run.stderr);
    assert.equal(run.status, 0, run.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
