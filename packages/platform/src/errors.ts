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

/** The errors the HTTP kit itself raises; every service catalogue must define them. */
export type KernelErrorKey =
  'validation' | 'invalidJson' | 'routeNotFound' | 'payloadTooLarge' | 'unsupportedMediaType' | 'unauthorized' | 'unavailable' | 'internal';

export type ErrorCatalogue<Key extends string> = Record<Key | KernelErrorKey, ErrorSpec>;

export type ErrorFactory<Key extends string> = (key: Key | KernelErrorKey, message?: string, details?: ErrorDetail[]) => ServiceError;

/** One place per service defines every error code, message and status; this makes the thrower. */
export function errorFactory<Key extends string>(catalogue: ErrorCatalogue<Key>): ErrorFactory<Key> {
  return (key, message, details) => {
    const spec = catalogue[key];
    return new ServiceError(spec.status, spec.code, message ?? spec.message, details);
  };
}
