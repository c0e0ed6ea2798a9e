import { z } from 'zod';

export interface ErrorSpec {
  status: number;
  code: string;
  message: string;
  /** When the service answers it: the error reference (docs/reference/errors.md) is generated from it. */
  when?: string;
}

export interface ErrorDetail {
  path: string;
  message: string;
}

/** ErrorDetail as both services' error bodies document it. */
export const errorDetailSchema = z
  .object({ path: z.string().meta({ description: 'Dotted path of the offending field; empty for the whole body' }), message: z.string() })
  .meta({ id: 'ErrorDetail' });

/** An error a service answers with; turned into the service's error body by its renderer. */
export class ServiceError extends Error {
  override name = 'ServiceError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: ErrorDetail[],
  ) {
    super(message);
  }
}

/** The errors the HTTP kit itself raises (and the scope refusal of its routes); every service catalogue must define them. */
export type KernelErrorKey =
  | 'validation'
  | 'invalidJson'
  | 'requestTimeout'
  | 'pathTooLong'
  | 'headersTooLarge'
  | 'routeNotFound'
  | 'payloadTooLarge'
  | 'unsupportedMediaType'
  | 'unauthorized'
  | 'forbidden'
  | 'unavailable'
  | 'internal';

export type ErrorCatalogue<Key extends string> = Record<Key | KernelErrorKey, ErrorSpec>;

/** The kit's errors as every service answers them, unless it gives one its own code or words (kitErrors). */
const KIT_ERRORS: ErrorCatalogue<never> = {
  unauthorized: { status: 401, code: 'unauthorized', message: 'Missing or invalid API key', when: 'No API key, or one that is unknown or revoked' },
  forbidden: { status: 403, code: 'forbidden', message: 'The API key lacks the scope this route needs', when: 'The API key lacks the scope the route needs' },
  routeNotFound: { status: 404, code: 'route_not_found', message: 'Route not found', when: 'No route has this method and path' },
  payloadTooLarge: { status: 413, code: 'payload_too_large', message: 'Request body too large', when: 'The body exceeds BODY_LIMIT_BYTES' },
  pathTooLong: { status: 414, code: 'uri_too_long', message: 'A path parameter is too long', when: 'A path parameter is longer than 1,024 characters' },
  internal: { status: 500, code: 'internal', message: 'Internal server error', when: 'An unexpected failure (logged with the request)' },
  validation: {
    status: 400,
    code: 'validation_error',
    message: 'Validation failed',
    when: 'A body, query or path parameter fails its schema (details name each field), or an unknown query parameter is sent',
  },
  invalidJson: {
    status: 400,
    code: 'invalid_json',
    message: 'Malformed JSON body',
    when: 'The body is not JSON: malformed, with a byte order mark, not UTF-8, or with a prototype-poisoning key',
  },
  requestTimeout: {
    status: 408,
    code: 'request_timeout',
    message: 'The request was not received in time',
    when: 'The headers (HTTP_HEADERS_TIMEOUT_MS) or the whole request (HTTP_REQUEST_TIMEOUT_MS) did not arrive in time; the connection is closed',
  },
  unsupportedMediaType: {
    status: 415,
    code: 'unsupported_media_type',
    message: 'Content-Type must be application/json',
    when: 'A body that is not application/json (or a charset or Content-Encoding the route does not take)',
  },
  headersTooLarge: {
    status: 431,
    code: 'headers_too_large',
    message: 'The request headers are too large',
    when: "The request's headers exceed the HTTP parser's limit (16 KiB); the connection is closed",
  },
  unavailable: {
    status: 503,
    code: 'unavailable',
    message: 'A dependency is unavailable; retry shortly',
    when: 'The database is unreachable, or the service is shutting down (retry after Retry-After)',
  },
};

/** The kit's errors of a service's catalogue: as KIT_ERRORS has them, but for the code or words `own` gives. */
export function kitErrors(own: Partial<Record<KernelErrorKey, Partial<Pick<ErrorSpec, 'code' | 'message' | 'when'>>>> = {}): ErrorCatalogue<never> {
  const keys = Object.keys(KIT_ERRORS) as KernelErrorKey[];
  return Object.fromEntries(keys.map((key) => [key, { ...KIT_ERRORS[key], ...own[key] }])) as ErrorCatalogue<never>;
}

/** A 404 of a thing looked up by id, worded alike in every catalogue: `notFound('event_not_found', 'event')`. */
export function notFound(code: string, thing: string): ErrorSpec {
  return { status: 404, code, message: `${thing[0]!.toUpperCase()}${thing.slice(1)} not found`, when: `No ${thing} has this id` };
}

export type ErrorFactory<Key extends string> = (key: Key | KernelErrorKey, message?: string, details?: ErrorDetail[]) => ServiceError;

/** One place per service defines every error code, message and status; this makes the thrower. */
export function errorFactory<Key extends string>(catalogue: ErrorCatalogue<Key>): ErrorFactory<Key> {
  return (key, message, details) => {
    const spec = catalogue[key];
    return new ServiceError(spec.status, spec.code, message ?? spec.message, details);
  };
}
