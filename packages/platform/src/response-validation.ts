import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ErrorFactory } from './errors.ts';

/**
 * The schema a route documents for a status: its `response` entry for the status (or `2xx`),
 * either a zod schema or `{ content: { 'application/json': { schema } } }` per content type.
 */
function documentedSchema(response: Record<string, unknown> | undefined, status: number): z.ZodType | undefined {
  const entry = response?.[String(status)] ?? response?.[`${Math.floor(status / 100)}xx`];
  if (entry instanceof z.ZodType) return entry;
  const schema = (entry as { content?: Record<string, { schema?: unknown }> } | undefined)?.content?.['application/json']?.schema;
  return schema instanceof z.ZodType ? schema : undefined;
}

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * The paths of `sent` that `parsed` (what the schema made of it) no longer holds: zod drops the keys
 * an object schema does not declare (records and loose objects keep theirs), so each one missing is
 * a field the handler answered and the schema lacks. Unions, intersections and recursive schemas
 * need no walk of their own this way.
 */
function undeclaredFields(sent: unknown, parsed: unknown, path: string, found: string[]): string[] {
  if (Array.isArray(sent) && Array.isArray(parsed)) {
    sent.forEach((item, index) => undeclaredFields(item, parsed[index], `${path}[${index}]`, found));
  } else if (isRecord(sent) && isRecord(parsed)) {
    for (const [key, value] of Object.entries(sent)) {
      const at = path === '' ? key : `${path}.${key}`;
      if (!(key in parsed)) found.push(at);
      else undeclaredFields(value, parsed[key], at, found);
    }
  }
  return found;
}

/** What is wrong with a JSON body against its schema, one line per problem; none when it matches exactly. */
export function responseProblems(schema: z.ZodType, body: unknown): string[] {
  const result = schema.safeParse(body);
  if (!result.success) return result.error.issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`);
  return undeclaredFields(body, result.data, '', []).map((path) => `${path}: not in the response schema`);
}

function jsonText(payload: unknown): string | undefined {
  if (typeof payload === 'string') return payload;
  return Buffer.isBuffer(payload) ? payload.toString('utf8') : undefined;
}

/**
 * For test kits only (production never registers it): every 2xx JSON answer of a route that
 * documents a schema for its status is checked against that schema, as fastify-response-validation
 * does, and strictly: a field the schema lacks, a missing field or a wrong type fails the request
 * with a 500 whose message names the route, the status and each problem, so the test that made the
 * call fails on it. Streams (the event stream, exports) are not read.
 */
export function validateResponses(app: FastifyInstance, errors: ErrorFactory<never>): void {
  app.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: Error | null, payload?: unknown) => void) => {
    const status = reply.statusCode;
    const contentType = String(reply.getHeader('content-type') ?? '');
    const schema =
      status >= 200 && status < 300 && contentType.startsWith('application/json')
        ? documentedSchema((request.routeOptions.schema as { response?: Record<string, unknown> } | undefined)?.response, status)
        : undefined;
    const text = schema === undefined ? undefined : jsonText(payload);
    if (schema === undefined || text === undefined) return done(null, payload);
    const problems = responseProblems(schema, JSON.parse(text));
    if (problems.length === 0) return done(null, payload);
    done(
      errors(
        'internal',
        `Response contract broken: ${request.method} ${request.routeOptions.url} answered ${status} against its schema: ${problems.join('; ')}`,
      ),
    );
  });
}
