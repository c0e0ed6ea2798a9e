/**
 * Renders an OpenAPI 3.1 document as a TypeScript module of type declarations: one type per
 * component schema the paths reach, and a `paths` interface giving every operation's path
 * parameters, query, body and responses. The SDK's clients are typed through `paths`, so a
 * change of a route schema changes the generated file (the drift test fails until it is
 * regenerated) and any client code the change breaks stops type-checking.
 */
import { collectRefs, emitType, propertyKey, UnsupportedSchemaError, type EmitOptions, type JsonSchema } from './emit.ts';

export interface OpenApiParameter {
  in: string;
  name: string;
  required?: boolean;
  description?: string;
  schema?: JsonSchema;
}

export interface OpenApiOperation {
  summary?: string;
  description?: string;
  parameters?: OpenApiParameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: JsonSchema }> };
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: JsonSchema }> }>;
}

export interface OpenApiDocument {
  openapi: string;
  info?: { title?: string; version?: string };
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

const COMPONENT_PREFIX = '#/components/schemas/';
const RESERVED = new Set(['paths', 'Paths', 'Operation', 'Record', 'Array', 'Promise', 'Error', 'Date', 'Map', 'Set', 'String', 'Number', 'Object', 'Boolean']);

function componentName(ref: string, where: string): string {
  if (!ref.startsWith(COMPONENT_PREFIX)) throw new UnsupportedSchemaError(where, `$ref ${ref} is not a component schema`);
  const name = ref.slice(COMPONENT_PREFIX.length);
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || RESERVED.has(name)) throw new UnsupportedSchemaError(where, `component name "${name}" cannot be a type name`);
  return name;
}

function jsonContent(content: Record<string, { schema?: JsonSchema }> | undefined, where: string): JsonSchema | undefined {
  if (content === undefined) return undefined;
  // An event stream (GET /api/stream) is typed as its text; clients read it with EventSource. So are
  // the audit log's C2SP answers (a signed note, a hash tile), which C2SP clients fetch themselves.
  const textual = ['text/event-stream', 'text/plain', 'application/octet-stream'];
  if (content['application/json'] === undefined && textual.some((type) => content[type] !== undefined)) return { type: 'string' };
  const json = content['application/json'];
  if (json === undefined) throw new UnsupportedSchemaError(where, `no application/json content (has ${Object.keys(content).join(', ')})`);
  return json.schema;
}

function doc(lines: Array<string | undefined>, pad: string): string {
  const text = lines
    .filter((l): l is string => typeof l === 'string' && l.trim() !== '')
    .join('\n\n')
    .replace(/\*\//g, '*\\/');
  if (text === '') return '';
  const split = text.split('\n');
  return split.length === 1 ? `${pad}/** ${split[0]} */\n` : `${pad}/**\n${split.map((l) => `${pad} *${l === '' ? '' : ` ${l}`}`).join('\n')}\n${pad} */\n`;
}

function block(text: string, pad: string): string {
  return text.replace(/\n/g, `\n${pad}`);
}

/** Every component schema reachable from the paths, following references between components. */
function reachableComponents(document: OpenApiDocument): string[] {
  const schemas = document.components?.schemas ?? {};
  const pending = [...collectRefs(document.paths)];
  const seen = new Set<string>();
  while (pending.length > 0) {
    const ref = pending.pop()!;
    if (seen.has(ref)) continue;
    seen.add(ref);
    const name = componentName(ref, 'paths');
    const schema = schemas[name];
    if (schema === undefined) throw new UnsupportedSchemaError(ref, 'referenced but not defined in components.schemas');
    pending.push(...collectRefs(schema));
  }
  return [...seen].map((ref) => componentName(ref, 'paths')).sort();
}

function objectOf(parameters: OpenApiParameter[], options: EmitOptions, where: string): string {
  if (parameters.length === 0) return 'Record<string, never>';
  const lines = parameters.map(
    (p) => `${doc([p.description], '  ')}  ${propertyKey(p.name)}${p.required ? '' : '?'}: ${block(emitType(p.schema, options, `${where}.${p.name}`), '  ')};`,
  );
  return `{\n${lines.join('\n')}\n}`;
}

function renderOperation(path: string, method: string, operation: OpenApiOperation, options: EmitOptions): string {
  const where = `${method.toUpperCase()} ${path}`;
  const parameters = operation.parameters ?? [];
  for (const p of parameters) {
    if (!['path', 'query', 'header'].includes(p.in)) throw new UnsupportedSchemaError(where, `parameter ${p.name} in ${p.in}`);
  }
  const pathParams = parameters.filter((p) => p.in === 'path');
  const declared = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  const missing = declared.filter((name) => !pathParams.some((p) => p.name === name));
  if (missing.length > 0) throw new UnsupportedSchemaError(where, `path parameters ${missing.join(', ')} have no schema`);

  const bodySchema = operation.requestBody === undefined ? undefined : jsonContent(operation.requestBody.content, `${where} requestBody`);
  const body = operation.requestBody === undefined ? 'never' : emitType(bodySchema, options, `${where} requestBody`);
  const responses = Object.entries(operation.responses ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, response]) => {
      if (!/^\d{3}$/.test(status)) throw new UnsupportedSchemaError(where, `response "${status}" is not a status code`);
      const schema = jsonContent(response.content, `${where} ${status}`);
      return `    ${status}: ${block(response.content === undefined ? 'void' : emitType(schema, options, `${where} ${status}`), '    ')};`;
    });

  return [
    `${doc([operation.summary, operation.description], '')}${method}: {`,
    `  params: ${block(objectOf(pathParams, options, `${where} params`), '  ')};`,
    `  query: ${block(
      objectOf(
        parameters.filter((p) => p.in === 'query'),
        options,
        `${where} query`,
      ),
      '  ',
    )};`,
    `  body: ${block(body, '  ')};`,
    `  bodyRequired: ${operation.requestBody === undefined ? 'false' : String(operation.requestBody.required ?? false)};`,
    `  responses: ${responses.length === 0 ? 'Record<string, never>' : `{\n${responses.join('\n')}\n  }`};`,
    '};',
  ].join('\n');
}

/** The TypeScript module for one service's OpenAPI document. Output is deterministic (sorted). */
export function renderModule(document: OpenApiDocument, service: string): string {
  const options: EmitOptions = { ref: componentName };
  const components = reachableComponents(document).map((name) => {
    const schema = document.components!.schemas![name]!;
    const description = typeof schema === 'object' ? schema.description : undefined;
    return `${doc([typeof description === 'string' ? description : undefined], '')}export type ${name} = ${emitType(schema, options, `components.schemas.${name}`)};`;
  });

  const paths = Object.keys(document.paths)
    .sort()
    .map((path) => {
      const item = document.paths[path]!;
      const unknownKeys = Object.keys(item).filter((k) => !(HTTP_METHODS as readonly string[]).includes(k));
      if (unknownKeys.length > 0) throw new UnsupportedSchemaError(path, `path item keys ${unknownKeys.join(', ')}`);
      const operations = HTTP_METHODS.filter((m) => item[m] !== undefined).map((m) => block(renderOperation(path, m, item[m]!, options), '    '));
      return `  ${JSON.stringify(path)}: {\n    ${operations.join('\n    ')}\n  };`;
    });

  return [
    `// Generated from the ${service} service's OpenAPI document (GET /api/openapi.json) by`,
    '// packages/sdk/scripts/generate.ts. Do not edit: run `npm run generate -w @vigil/sdk`.',
    '// packages/sdk/src/generated.test.ts fails when this file and the served document differ.',
    '/* eslint-disable */',
    '',
    ...components.flatMap((c) => [c, '']),
    'export interface paths {',
    ...paths,
    '}',
    '',
  ].join('\n');
}
