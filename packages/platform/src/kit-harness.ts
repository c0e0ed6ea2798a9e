// The HTTP kit's own tests build bare apps of the kit (no service): the kit's own error catalogue
// and the options every such app shares, so each test states only what it is about.
import { z } from 'zod';
import { errorFactory, kitErrors } from './errors.ts';
import { createHttpApp, type HttpKitOptions } from './http.ts';

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
    errors: errorFactory(kitErrors()),
    renderError: (error) => ({ message: error.message }),
    errorSchema: z.object({ message: z.string() }).meta({ id: 'KitError' }),
    ...options,
  });
}
