/**
 * The fetch the gateway's gate and observe clients use: node:http(s) over kept-alive connections
 * instead of the global fetch (undici's), whose per-request work (WHATWG streams, Request, Response
 * and Headers objects, abort plumbing) was about a third of the gateway's CPU per tool call. It
 * covers what the SDK's transport asks of fetch (method, headers, a string body, an abort signal)
 * and reads of the answer: `status`, `ok`, `statusText`, `headers.get`, `text()` and `json()` —
 * an object with those members, not a full Response (no body stream is built).
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
    const given = init.headers;
    // The SDK's transport passes a plain record; anything else is read through Headers.
    const headers: Record<string, string> =
      given === undefined || (given.constructor === Object && !Array.isArray(given))
        ? { ...(given as Record<string, string> | undefined) }
        : Object.fromEntries(new Headers(given).entries());
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
          const text = Buffer.concat(chunks).toString('utf8');
          const response = {
            status,
            ok: status >= 200 && status < 300,
            statusText: answer.statusMessage ?? '',
            headers: {
              get: (name: string): string | null => {
                const value = answer.headers[name.toLowerCase()];
                return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
              },
            },
            text: () => Promise.resolve(text),
            json: () => Promise.resolve(JSON.parse(text) as unknown),
          };
          resolve(response as unknown as Response);
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
