import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ZodApp } from '@vigil/platform';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';

/**
 * The web dashboard (packages/dashboard, built by Vite into its dist/) served at `/`, and the
 * dashboard's way to the gate: `/gate/api/*` forwarded to GATE_URL, so the browser talks to one
 * origin and the gate needs no CORS. Every route here is `public`: the files hold no data, and the
 * forwarded calls are authenticated by the gate itself (observe never looks at the credential).
 *
 * - `GET /` and any other GET outside `/api` (client-side routes such as `/sessions/abc`): the
 *   app's index.html, `Cache-Control: no-cache` (revalidated, so a new build shows at once).
 * - `GET /assets/*`: the hashed bundles, `Cache-Control: public, max-age=31536000, immutable`.
 * - `GET /api/<unknown>` still answers observe's 404 error body, like every other unknown route.
 */

/** Where `npm run build -w @vigil/dashboard` writes the app. */
export const DEFAULT_DASHBOARD_DIR = fileURLToPath(new URL('../../../dashboard/dist/', import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
};

const IMMUTABLE = 'public, max-age=31536000, immutable';

/** The app needs nothing but its own origin: scripts and styles from /assets, API calls to /api and /gate/api. */
const HTML_HEADERS = {
  'cache-control': 'no-cache',
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="3"><title>Vigil: building the dashboard</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; line-height: 1.5">
<h1>The dashboard is being built</h1>
<p><code>npm start</code> builds it at the first start (a few seconds); this page reloads every 3 seconds until it is there.</p>
<p>If it does not appear, look at the terminal where Vigil runs, or build it by hand with <code>npm run build</code>.
The API is unaffected: it answers under <code>/api</code>.</p>
</body></html>`;

/** A file name directly under dist/ that may be served as is (favicon and the like, never index.html). */
const ROOT_FILE = /^\/[A-Za-z0-9][A-Za-z0-9_.-]*\.(svg|png|ico|txt|webmanifest)$/;

function isInside(dir: string, file: string): boolean {
  return file.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

export interface DashboardRouteOptions {
  /** Directory of the built app (index.html, assets/); default the dashboard package's dist/. */
  dir?: string;
  /** Deadline of one forwarded gate call. */
  gateTimeoutMs?: number;
}

export function registerDashboardRoutes(app: ZodApp, ctx: ObserveContext, options: DashboardRouteOptions = {}): void {
  const dir = resolve(options.dir ?? DEFAULT_DASHBOARD_DIR);
  const assetsDir = join(dir, 'assets');
  const indexFile = join(dir, 'index.html');

  async function sendFile(reply: FastifyReply, file: string, cacheControl: string): Promise<boolean> {
    let size: number;
    try {
      const info = await stat(file);
      if (!info.isFile()) return false;
      size = info.size;
    } catch {
      return false;
    }
    void reply
      .header('content-type', CONTENT_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream')
      .header('content-length', size)
      .header('cache-control', cacheControl)
      .header('x-content-type-options', 'nosniff');
    await reply.send(createReadStream(file));
    return true;
  }

  async function sendIndex(reply: FastifyReply): Promise<FastifyReply> {
    let html: string;
    try {
      html = await readFile(indexFile, 'utf8');
    } catch {
      return reply.status(503).headers(HTML_HEADERS).type('text/html; charset=utf-8').send(NOT_BUILT_PAGE);
    }
    return reply.headers(HTML_HEADERS).type('text/html; charset=utf-8').send(html);
  }

  const page = { config: { auth: 'public' as const }, schema: { hide: true } };

  app.get('/', page, async (_request, reply) => sendIndex(reply));

  app.get('/assets/*', page, async (request, reply) => {
    const path = request.url.split('?')[0]!;
    let name: string;
    try {
      name = decodeURIComponent(path.slice('/assets/'.length));
    } catch {
      name = '';
    }
    const file = resolve(assetsDir, name);
    if (name === '' || !isInside(assetsDir, file) || !(await sendFile(reply, file, IMMUTABLE))) {
      throw observeError('routeNotFound', `Asset ${path} not found`);
    }
    return reply;
  });

  // Client-side routes of the single-page app, for browser navigations only: the API's prefixes
  // stay the API's (unknown routes included), and a program asking for JSON gets the 404 it expects.
  app.get('/*', page, async (request, reply) => {
    const path = request.url.split('?')[0]!;
    const notFound = () => observeError('routeNotFound', `Route GET ${path} not found`);
    if (API_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))) throw notFound();
    if (ROOT_FILE.test(path) && (await sendFile(reply, join(dir, path.slice(1)), 'public, max-age=3600'))) return reply;
    if (!String(request.headers.accept ?? '').includes('text/html')) throw notFound();
    return sendIndex(reply);
  });

  registerGateProxy(app, ctx.config.gateUrl, options.gateTimeoutMs ?? 15_000);
}

/** Request headers passed on to the gate, and response headers passed back. */
/** Paths that belong to the services' APIs (and OTLP's /v1): never answered with the app. */
const API_PREFIXES = ['/api', '/health', '/metrics', '/v1'];

const FORWARDED_REQUEST_HEADERS = ['authorization', 'content-type', 'accept'] as const;
const FORWARDED_RESPONSE_HEADERS = ['content-type', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after'] as const;

/**
 * `/gate/api/<path>` → `GATE_URL/api/<path>`, method, query, body bytes and credential unchanged,
 * with the gate's status, body and rate-limit headers. The body is read as raw bytes in this
 * plugin (its own content-type parser), so the gate judges it exactly as sent. An unreachable or
 * silent gate is a 502 / 504 in the gate's error body, which the dashboard shows in words.
 */
function registerGateProxy(app: ZodApp, gateUrl: string, timeoutMs: number): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    scope.route({
      method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      url: '/gate/api/*',
      config: { auth: 'public' },
      schema: { hide: true },
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        const [path = '', query] = request.url.split(/\?(.*)/s);
        const target = `${gateUrl}/api/${path.slice('/gate/api/'.length)}${query === undefined ? '' : `?${query}`}`;
        const headers: Record<string, string> = {};
        for (const name of FORWARDED_REQUEST_HEADERS) {
          const value = request.headers[name];
          if (typeof value === 'string') headers[name] = value;
        }
        const body = request.body instanceof Buffer ? request.body : undefined;
        let response: Response;
        try {
          response = await fetch(target, {
            method: request.method,
            headers,
            ...(body !== undefined && request.method !== 'GET' && { body }),
            redirect: 'manual',
            signal: AbortSignal.timeout(timeoutMs),
          });
        } catch (error) {
          const timedOut = (error as Error).name === 'TimeoutError';
          request.log.warn({ err: error, gateUrl }, 'the gate did not answer a dashboard call');
          return reply.status(timedOut ? 504 : 502).send({
            error: {
              code: timedOut ? 'gateway_timeout' : 'bad_gateway',
              message: timedOut
                ? `The gate at ${gateUrl} did not answer within ${timeoutMs / 1000} s`
                : `The gate at ${gateUrl} is not reachable; is it running? (set GATE_URL if it listens elsewhere)`,
            },
          });
        }
        void reply.status(response.status);
        for (const name of FORWARDED_RESPONSE_HEADERS) {
          const value = response.headers.get(name);
          if (value !== null) void reply.header(name, value);
        }
        void reply.header('cache-control', 'no-store');
        return reply.send(Buffer.from(await response.arrayBuffer()));
      },
    });
  });
}
