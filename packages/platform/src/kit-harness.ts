// The HTTP kit's own tests build bare apps of the kit (no service): one error catalogue and the
// options every such app shares, so each test states only what it is about.
import { z } from 'zod';
import { errorFactory, type ErrorCatalogue } from './errors.ts';
import { createHttpApp, type HttpKitOptions } from './http.ts';

const catalogue: ErrorCatalogue<never> = {
  validation: { status: 400, code: 'bad_request', message: 'Invalid request' },
  invalidJson: { status: 400, code: 'invalid_json', message: 'Malformed JSON body' },
  unauthorized: { status: 401, code: 'unauthorized', message: 'Missing or invalid API key' },
  routeNotFound: { status: 404, code: 'not_found', message: 'Route not found' },
  payloadTooLarge: { status: 413, code: 'payload_too_large', message: 'Too large' },
  unsupportedMediaType: { status: 415, code: 'unsupported_media_type', message: 'JSON only' },
  internal: { status: 500, code: 'internal', message: 'Internal server error' },
  unavailable: { status: 503, code: 'unavailable', message: 'Unavailable' },
};

/** An app of the kit named `kit`, silent, with the options given replacing the defaults. */
export function createKitApp(options: Partial<HttpKitOptions> & Pick<HttpKitOptions, 'scopes' | 'authErrorStatuses'>) {
  return createHttpApp({
    title: 'kit',
    description: 'A service of the HTTP kit',
    version: '0',
    service: 'kit',
    logLevel: 'silent',
    bodyLimitBytes: 1024,
    timeouts: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 },
    databaseProbe: async () => undefined,
    errors: errorFactory(catalogue),
    renderError: (error) => ({ message: error.message }),
    errorSchema: z.object({ message: z.string() }).meta({ id: 'KitError' }),
    ...options,
  });
}
