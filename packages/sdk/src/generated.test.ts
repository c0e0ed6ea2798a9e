import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { emitType, UnsupportedSchemaError, type JsonSchema } from './codegen/emit.ts';
import { generateSources } from './codegen/generate.ts';
import { renderModule, type OpenApiDocument } from './codegen/render.ts';

/** A short account of where two texts first differ (assert.equal would print both 50 kB files). */
function firstDifference(actual: string, expected: string): string {
  const a = actual.split('\n');
  const b = expected.split('\n');
  let line = 0;
  while (line < a.length && line < b.length && a[line] === b[line]) line++;
  const show = (lines: string[]) =>
    lines
      .slice(Math.max(0, line - 2), line + 4)
      .map((l, i) => `    ${Math.max(0, line - 2) + i + 1}: ${l}`)
      .join('\n');
  return `first difference at line ${line + 1}\n  committed:\n${show(a)}\n  served now:\n${show(b)}`;
}

const ref = (r: string) => r.replace('#/components/schemas/', '');
const emit = (schema: JsonSchema) => emitType(schema, { ref }, 'test');

describe('generated types', () => {
  test('src/generated/*.ts are what the services serve now (regenerate: npm run generate -w @vigil/sdk)', async () => {
    const sources = await generateSources();
    assert.deepEqual(Object.keys(sources).sort(), ['generated/gate.ts', 'generated/observe.ts']);
    for (const [file, expected] of Object.entries(sources)) {
      const committed = readFileSync(join(import.meta.dirname, file), 'utf8');
      if (committed !== expected) {
        assert.fail(
          `packages/sdk/src/${file} drifted from the ${file.includes('gate') ? 'gate' : 'observe'} OpenAPI document; ` +
            `run \`npm run generate -w @vigil/sdk\` and review the diff.\n${firstDifference(committed, expected)}`,
        );
      }
    }
    // The parts the SDK's hand-written code relies on are there.
    assert.match(sources['generated/observe.ts']!, /"\/api\/events": \{/);
    assert.match(sources['generated/gate.ts']!, /export type ApprovalRequest = \{/);
  });
});

describe('JSON Schema → TypeScript emitter', () => {
  test('scalars, enums, nullable types and arrays', () => {
    assert.equal(emit({ type: 'string', minLength: 1 }), 'string');
    assert.equal(emit({ type: 'integer', minimum: 0 }), 'number');
    assert.equal(emit({ type: ['string', 'null'] }), 'string | null');
    assert.equal(emit({ type: 'string', enum: ['a', 'b'] }), '"a" | "b"');
    assert.equal(emit({ const: 42 }), '42');
    assert.equal(emit({ type: 'array', items: { type: 'string', enum: ['x', 'y'] } }), '("x" | "y")[]');
    assert.equal(emit({}), 'unknown');
    assert.equal(emit({ anyOf: [{ type: 'number' }, { type: 'null' }] }), 'number | null');
  });

  test('objects: required and optional properties, closed, open and map objects', () => {
    assert.equal(
      emit({ type: 'object', properties: { id: { type: 'string' }, 'x-y': { type: 'number' } }, required: ['id'], additionalProperties: false }),
      '{\n  id: string;\n  "x-y"?: number;\n}',
    );
    assert.equal(emit({ type: 'object', propertyNames: { type: 'string' }, additionalProperties: {} }), '{\n  [key: string]: unknown;\n}');
    assert.equal(emit({ type: 'object', additionalProperties: { type: 'number' } }), '{\n  [key: string]: number;\n}');
    assert.equal(
      emit({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: {} }),
      '{\n  a: string;\n  [key: string]: unknown;\n}',
    );
  });

  test('oneOf gives a union (discriminated when its members have a literal tag), $ref a named type', () => {
    const type = emit({
      oneOf: [
        { type: 'object', properties: { kind: { type: 'string', enum: ['a'] }, n: { type: 'number' } }, required: ['kind', 'n'] },
        { $ref: '#/components/schemas/Other' },
      ],
    });
    assert.equal(type, '{\n  kind: "a";\n  n: number;\n} | Other');
  });

  test('an unsupported construct stops generation with its location', () => {
    assert.throws(
      () => emit({ type: 'object', properties: { when: { type: 'string', if: {} } } }),
      (error: unknown) => {
        assert.ok(error instanceof UnsupportedSchemaError);
        assert.match(error.message, /test\.properties\.when: unsupported keyword "if"/);
        return true;
      },
    );
  });

  test('a dangling $ref is an error, not an unknown type', () => {
    const document: OpenApiDocument = {
      openapi: '3.1.0',
      paths: { '/x': { get: { responses: { '200': { content: { 'application/json': { schema: { $ref: '#/components/schemas/Missing' } } } } } } } },
      components: { schemas: {} },
    };
    assert.throws(() => renderModule(document, 'test'), /Missing: referenced but not defined/);
  });

  test('a text/event-stream response is typed as its text; another non-JSON response stops generation', () => {
    const document = (type: string): OpenApiDocument => ({
      openapi: '3.1.0',
      paths: { '/x': { get: { responses: { '200': { content: { [type]: { schema: { type: 'string' } } } } } } } },
    });
    assert.match(renderModule(document('text/event-stream'), 'test'), /responses: \{\n {8}200: string;/);
    assert.throws(() => renderModule(document('text/csv'), 'test'), /no application\/json content \(has text\/csv\)/);
  });

  test('an operation: path parameters, query, body and responses', () => {
    const document: OpenApiDocument = {
      openapi: '3.1.0',
      paths: {
        '/api/things/{id}': {
          post: {
            summary: 'Update a thing',
            parameters: [
              { in: 'path', name: 'id', required: true, schema: { type: 'string' } },
              { in: 'query', name: 'dryRun', required: false, schema: { type: 'boolean' } },
            ],
            requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } },
            responses: { '200': { content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } } },
          },
        },
      },
      components: { schemas: { Thing: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }, Unused: { type: 'string' } } },
    };
    const module = renderModule(document, 'test');
    assert.match(module, /export type Thing = \{\n {2}name: string;\n\};/);
    assert.doesNotMatch(module, /Unused/, 'only components the paths reach');
    assert.match(
      module,
      /\/\*\* Update a thing \*\/\n {4}post: \{\n {6}params: \{\n {8}id: string;\n {6}\};\n {6}query: \{\n {8}dryRun\?: boolean;\n {6}\};\n {6}body: Thing;\n {6}bodyRequired: true;\n {6}responses: \{\n {8}200: Thing;/,
    );
  });
});
