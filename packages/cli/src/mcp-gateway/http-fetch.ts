/**
 * The fetch the gateway's gate and observe clients use: node:http(s) over kept-alive connections
 * instead of the global fetch (undici's), whose per-request work (WHATWG streams, Request and
 * Headers objects, abort plumbing) cost the gateway more CPU per tool call than everything else it
 * does. It covers what the SDK's transport asks of fetch (method, headers, a string body, an
 * abort signal; the answer's status, headers and text), nothing more.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

export interface KeepAliveFetch {
  fetch: typeof fetch;
  /** Closes the kept-alive connections. */
  close(): void;
}

export function keepAliveFetch(): KeepAliveFetch {
  const agents = { http: new HttpAgent({ keepAlive: true, scheduling: 'lifo' }), https: new HttpsAgent({ keepAlive: true, scheduling: 'lifo' }) };
  const send = (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const secure = url.protocol === 'https:';
    if (!secure && url.protocol !== 'http:') return Promise.reject(new TypeError(`unsupported protocol ${url.protocol}`));
    const body = init.body;
    if (body !== undefined && body !== null && typeof body !== 'string') return Promise.reject(new TypeError('only a string body is supported'));
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    if (body !== undefined && body !== null) headers['content-length'] = String(Buffer.byteLength(body));
    const signal = init.signal ?? undefined;
    return new Promise<Response>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const request = (secure ? httpsRequest : httpRequest)(url, { method: init.method ?? 'GET', headers, agent: secure ? agents.https : agents.http });
      const onAbort = (): void => {
        request.destroy(signal!.reason instanceof Error ? signal!.reason : new Error(String(signal!.reason)));
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = (): void => signal?.removeEventListener('abort', onAbort);
      request.once('error', (error) => {
        done();
        reject(new TypeError('fetch failed', { cause: error }));
      });
      request.once('response', (answer: IncomingMessage) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.once('error', (error) => {
          done();
          reject(new TypeError('fetch failed', { cause: error }));
        });
        answer.once('end', () => {
          done();
          const status = answer.statusCode ?? 0;
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(answer.headers)) {
            if (value !== undefined) responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
          }
          // A null body where the Response constructor wants one (204, 304).
          const text = Buffer.concat(chunks).toString('utf8');
          resolve(new Response(status === 204 || status === 304 ? null : text, { status, statusText: answer.statusMessage ?? '', headers: responseHeaders }));
        });
      });
      request.end(body ?? undefined);
    });
  };
  return {
    fetch: send as typeof fetch,
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
