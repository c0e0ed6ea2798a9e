/**
 * A small JSON Schema → TypeScript type emitter for the subset the services' OpenAPI documents
 * use (zod 4's JSON Schema output, OpenAPI 3.1 dialect). Anything outside that subset stops the
 * generator with the schema's location instead of degrading to `unknown`, so a new construct in
 * a route schema is noticed rather than silently typed loosely.
 */

export type JsonSchema = boolean | { [keyword: string]: unknown };

/** Keywords that only constrain values (lengths, ranges, formats) or document them: no effect on the type. */
const IGNORED = new Set([
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'default',
  'examples',
  'example',
  'title',
  'description',
  'deprecated',
  'readOnly',
  'writeOnly',
  'propertyNames',
  '$schema',
  'contentEncoding',
  'contentMediaType',
]);

const HANDLED = new Set(['type', 'enum', 'const', 'properties', 'required', 'additionalProperties', 'items', 'prefixItems', 'anyOf', 'oneOf', 'allOf', '$ref']);

export class UnsupportedSchemaError extends Error {
  constructor(where: string, detail: string) {
    super(`${where}: ${detail}`);
    this.name = 'UnsupportedSchemaError';
  }
}

export interface EmitOptions {
  /** Maps a `$ref` to the TypeScript name to use. */
  ref(ref: string, where: string): string;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

export function propertyKey(name: string): string {
  return IDENTIFIER.test(name) ? name : JSON.stringify(name);
}

function literal(value: unknown, where: string): string {
  if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return JSON.stringify(value);
  throw new UnsupportedSchemaError(where, `enum/const value ${JSON.stringify(value)} is not a JSON scalar`);
}

/** Whether `type` has `operator` (`|` or `&`) outside brackets, braces, parentheses and strings. */
export function hasTopLevel(type: string, operator: '|' | '&'): boolean {
  let depth = 0;
  let quote: string | null = null;
  for (let i = 0; i < type.length; i++) {
    const c = type[i]!;
    if (quote !== null) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '{' || c === '[' || c === '(') depth++;
    else if (c === '}' || c === ']' || c === ')') depth--;
    else if (depth === 0 && c === operator) return true;
  }
  return false;
}

function union(members: string[]): string {
  const unique = [...new Set(members)];
  if (unique.includes('unknown')) return 'unknown';
  if (unique.length === 0) return 'never';
  return unique.length === 1 ? unique[0]! : unique.map((m) => (hasTopLevel(m, '&') ? `(${m})` : m)).join(' | ');
}

function intersection(members: string[]): string {
  const unique = [...new Set(members)].filter((m) => m !== 'unknown');
  if (unique.length === 0) return 'unknown';
  return unique.length === 1 ? unique[0]! : unique.map((m) => (hasTopLevel(m, '|') ? `(${m})` : m)).join(' & ');
}

function indent(text: string, by: string): string {
  return text.replace(/\n/g, `\n${by}`);
}

function jsDoc(description: unknown, pad: string): string {
  if (typeof description !== 'string' || description.trim() === '') return '';
  const lines = description.trim().replace(/\*\//g, '*\\/').split('\n');
  return lines.length === 1 ? `${pad}/** ${lines[0]} */\n` : `${pad}/**\n${lines.map((l) => `${pad} * ${l}`).join('\n')}\n${pad} */\n`;
}

/** The TypeScript type of `schema`. `where` names the schema's location for error messages. */
export function emitType(schema: JsonSchema | undefined, options: EmitOptions, where: string): string {
  if (schema === undefined || schema === true) return 'unknown';
  if (schema === false) return 'never';
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new UnsupportedSchemaError(where, 'schema is not an object');

  for (const keyword of Object.keys(schema)) {
    if (!HANDLED.has(keyword) && !IGNORED.has(keyword)) throw new UnsupportedSchemaError(where, `unsupported keyword "${keyword}"`);
  }

  if (typeof schema.$ref === 'string') {
    const others = Object.keys(schema).filter((k) => k !== '$ref' && !IGNORED.has(k));
    if (others.length > 0) throw new UnsupportedSchemaError(where, `$ref with sibling keywords ${others.join(', ')}`);
    return options.ref(schema.$ref, where);
  }

  const parts: string[] = [];
  const combinators = (['anyOf', 'oneOf'] as const).filter((k) => schema[k] !== undefined);
  for (const key of combinators) {
    const members = schema[key];
    if (!Array.isArray(members)) throw new UnsupportedSchemaError(where, `${key} is not an array`);
    parts.push(union(members.map((member, i) => emitType(member as JsonSchema, options, `${where}.${key}[${i}]`))));
  }
  if (schema.allOf !== undefined) {
    if (!Array.isArray(schema.allOf)) throw new UnsupportedSchemaError(where, 'allOf is not an array');
    parts.push(intersection(schema.allOf.map((member, i) => emitType(member as JsonSchema, options, `${where}.allOf[${i}]`))));
  }

  const own = ownType(schema, options, where);
  if (own !== null) parts.push(own);
  return intersection(parts);
}

/** The type the schema's own keywords (type, enum, const, properties, items) describe; null when none. */
function ownType(schema: { [keyword: string]: unknown }, options: EmitOptions, where: string): string | null {
  if (schema.const !== undefined) return literal(schema.const, `${where}.const`);
  if (schema.enum !== undefined) {
    if (!Array.isArray(schema.enum)) throw new UnsupportedSchemaError(where, 'enum is not an array');
    return union(schema.enum.map((value, i) => literal(value, `${where}.enum[${i}]`)));
  }
  const declared = schema.type;
  let types: string[];
  if (declared === undefined) {
    if (schema.properties !== undefined || schema.additionalProperties !== undefined) types = ['object'];
    else if (schema.items !== undefined || schema.prefixItems !== undefined) types = ['array'];
    else return null;
  } else if (typeof declared === 'string') {
    types = [declared];
  } else if (Array.isArray(declared) && declared.every((t) => typeof t === 'string')) {
    types = declared as string[];
  } else {
    throw new UnsupportedSchemaError(where, `type ${JSON.stringify(declared)}`);
  }
  return union(
    types.map((type) => {
      switch (type) {
        case 'string':
          return 'string';
        case 'number':
        case 'integer':
          return 'number';
        case 'boolean':
          return 'boolean';
        case 'null':
          return 'null';
        case 'array':
          return arrayType(schema, options, where);
        case 'object':
          return objectType(schema, options, where);
        default:
          throw new UnsupportedSchemaError(where, `unknown type "${type}"`);
      }
    }),
  );
}

function arrayType(schema: { [keyword: string]: unknown }, options: EmitOptions, where: string): string {
  if (schema.prefixItems !== undefined) {
    if (!Array.isArray(schema.prefixItems)) throw new UnsupportedSchemaError(where, 'prefixItems is not an array');
    const members = schema.prefixItems.map((item, i) => emitType(item as JsonSchema, options, `${where}.prefixItems[${i}]`));
    const rest =
      schema.items === undefined || schema.items === false ? [] : [`...${wrapArrayItem(emitType(schema.items as JsonSchema, options, `${where}.items`))}[]`];
    return `[${[...members, ...rest].join(', ')}]`;
  }
  const item = emitType(schema.items as JsonSchema | undefined, options, `${where}.items`);
  return `${wrapArrayItem(item)}[]`;
}

function wrapArrayItem(item: string): string {
  return hasTopLevel(item, '|') || hasTopLevel(item, '&') ? `(${item})` : item;
}

function objectType(schema: { [keyword: string]: unknown }, options: EmitOptions, where: string): string {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  if (typeof properties !== 'object' || properties === null || Array.isArray(properties))
    throw new UnsupportedSchemaError(where, 'properties is not an object');
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const lines: string[] = [];
  for (const [name, property] of Object.entries(properties)) {
    const type = emitType(property, options, `${where}.properties.${name}`);
    const doc = typeof property === 'object' ? jsDoc(property.description, '  ') : '';
    lines.push(`${doc}  ${propertyKey(name)}${required.has(name) ? '' : '?'}: ${indent(type, '  ')};`);
  }
  const extra = schema.additionalProperties;
  // Absent or false: a closed object. `{}`/true: any further keys. A schema: further keys of that type.
  if (extra !== undefined && extra !== false) {
    let valueType = emitType(extra as JsonSchema, options, `${where}.additionalProperties`);
    // Named properties must fit the index signature; widen to unknown rather than emit an invalid type.
    if (lines.length > 0 && valueType !== 'unknown') valueType = 'unknown';
    lines.push(`  [key: string]: ${indent(valueType, '  ')};`);
  }
  if (lines.length === 0) return extra === false ? 'Record<string, never>' : '{}';
  return `{\n${lines.join('\n')}\n}`;
}

/** Every `$ref` reachable from `schema`. */
export function collectRefs(schema: unknown, found: Set<string> = new Set()): Set<string> {
  if (Array.isArray(schema)) {
    for (const item of schema) collectRefs(item, found);
  } else if (schema !== null && typeof schema === 'object') {
    for (const [key, value] of Object.entries(schema)) {
      if (key === '$ref' && typeof value === 'string') found.add(value);
      else collectRefs(value, found);
    }
  }
  return found;
}
