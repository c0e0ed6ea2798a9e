import { fetchWithTimeout, type ZodApp } from '@vigil/platform';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';

/** Forwarded writes: they need `admin` where a forwarded read (GET) needs `read`. */
const WRITE_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'];
const PASSED_RESPONSE_HEADERS = ['content-type', 'cache-control', 'etag', 'location'];

/**
 * `/api/memory/<rest>` is forwarded to `MEMORY_API_URL/<rest>` with the memory server's own key
 * (the caller's Vigil key never leaves this service). Lessons and community sharing moved there
 * in 0.12.0, so their old paths answer 404.
 */
export function registerMemoryRoutes(app: ZodApp, ctx: ObserveContext): void {
  const memory = ctx.config.memory;

  const forward = async (request: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    if (!memory.enabled || !memory.url) throw observeError('memoryDisabled');
    const [path, query] = splitUrl(request.url.slice('/api/memory'.length));
    const target = new URL(memory.url.replace(/\/+$/, '') + (path || '/') + query);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (memory.apiKey) headers.authorization = `Bearer ${memory.apiKey}`;
    const hasBody = request.body !== undefined && request.method !== 'GET' && request.method !== 'DELETE';
    if (hasBody) headers['content-type'] = 'application/json';
    let response: Response;
    let body: Buffer;
    try {
      response = await fetchWithTimeout(target, {
        method: request.method,
        headers,
        body: hasBody ? JSON.stringify(request.body) : undefined,
        timeoutMs: memory.timeoutMs,
      });
      // The deadline covers the whole body, not just the headers.
      body = Buffer.from(await response.arrayBuffer());
    } catch (error) {
      request.log.warn({ err: error, target: target.origin }, 'memory server unreachable');
      throw observeError('memoryUnreachable');
    }
    for (const name of PASSED_RESPONSE_HEADERS) {
      const value = response.headers.get(name);
      if (value !== null) void reply.header(name, value);
    }
    return reply.status(response.status).send(body);
  };

  const hidden = { hide: true } as const;
  const forwarded = (url: string, handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>): void => {
    app.route({ method: 'GET', url, config: { scope: 'read' }, schema: hidden, handler });
    app.route({ method: WRITE_METHODS, url, config: { scope: 'admin' }, schema: hidden, handler });
  };
  forwarded('/api/memory', forward);
  forwarded('/api/memory/*', forward);

  const removed = async (): Promise<never> => {
    throw observeError('lessonsRemoved');
  };
  for (const url of ['/api/lessons', '/api/lessons/*', '/api/community', '/api/community/*']) {
    forwarded(url, removed);
  }
}

function splitUrl(url: string): [string, string] {
  const index = url.indexOf('?');
  return index === -1 ? [url, ''] : [url.slice(0, index), url.slice(index)];
}
