/**
 * Reads the OpenAPI documents the two services serve at GET /api/openapi.json, by building each
 * real app in-process on a throw-away SQLite database (no port, no network).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestGate } from '@vigil/gate/testing';
import { startTestObserve } from '@vigil/observe/testing';
import type { TestBackend } from '@vigil/platform/testing';
import { jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { collectRefs } from './emit.ts';
import type { OpenApiDocument } from './render.ts';
import type { JsonSchema } from './emit.ts';

export type ServiceName = 'observe' | 'gate';

function temporarySqlite(): { backend: TestBackend; cleanup(): void } {
  const dirs: string[] = [];
  return {
    backend: {
      kind: 'sqlite',
      freshDatabase() {
        const dataDir = mkdtempSync(join(tmpdir(), 'vigil-sdk-codegen-'));
        dirs.push(dataDir);
        return { kind: 'sqlite', file: join(dataDir, 'codegen.db'), synchronous: 'NORMAL', dataDir };
      },
    },
    cleanup: () => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })),
  };
}

/**
 * The services' documents reference named schemas (`.meta({ id })`) as
 * `#/components/schemas/<id>` but, as served today, leave `components.schemas` empty: the
 * swagger plugin is registered without fastify-type-provider-zod's `transformObject`. Until that
 * is fixed in packages/platform/src/http.ts, the missing definitions are filled in here from the
 * same zod registry, with the same converter the fix would use, so the generated types are the
 * ones the fixed document will give (and this step becomes a no-op).
 */
function withReferencedComponents(served: OpenApiDocument): OpenApiDocument {
  const present = served.components?.schemas ?? {};
  const missing = [...collectRefs(served.paths)].some((ref) => present[ref.replace('#/components/schemas/', '')] === undefined);
  if (!missing) return served;
  const transform = jsonSchemaTransformObject as unknown as (input: { openapiObject: OpenApiDocument }) => OpenApiDocument;
  const registry = transform({ openapiObject: { ...served, components: { ...served.components, schemas: {} } } }).components?.schemas ?? {};
  const schemas: Record<string, JsonSchema> = { ...registry, ...present };
  return { ...served, components: { ...served.components, schemas } };
}

async function fetchDocument(call: (path: string) => Promise<{ statusCode: number; body: string }>, service: ServiceName): Promise<OpenApiDocument> {
  const response = await call('/api/openapi.json');
  if (response.statusCode !== 200) throw new Error(`${service}: GET /api/openapi.json answered ${response.statusCode}: ${response.body}`);
  return withReferencedComponents(JSON.parse(response.body) as OpenApiDocument);
}

/**
 * Both services' OpenAPI documents, as GET /api/openapi.json serves them (components completed, see
 * above); `gateEnv` configures the gate (its chat routes exist only with a chat platform configured).
 */
export async function loadOpenApiDocuments(gateEnv: Record<string, string> = {}): Promise<Record<ServiceName, OpenApiDocument>> {
  const { backend, cleanup } = temporarySqlite();
  try {
    const observe = await startTestObserve(backend);
    let observeDoc: OpenApiDocument;
    try {
      observeDoc = await fetchDocument((url) => observe.call({ method: 'GET', url }), 'observe');
    } finally {
      await observe.close();
    }
    const gate = await startTestGate(backend, { env: gateEnv });
    try {
      return { observe: observeDoc, gate: await fetchDocument((url) => gate.call({ method: 'GET', url }), 'gate') };
    } finally {
      await gate.close();
    }
  } finally {
    cleanup();
  }
}
