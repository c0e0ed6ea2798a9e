import { z } from 'zod';

/** `base` with each field that `changes` defines replaced: the resource a partial PUT leaves behind. */
export function withChanges<T extends object>(base: T, changes: { [K in keyof T]?: T[K] | undefined }): T {
  const merged = { ...base };
  for (const key of Object.keys(changes) as (keyof T)[]) {
    const value = changes[key];
    if (value !== undefined) merged[key] = value;
  }
  return merged;
}

/**
 * A write body that also takes back what the matching GET answered: the fields of `read` that
 * `write` does not define are read-only, accepted (typed as read) and dropped, so a client can
 * send the object it read with its changes. Keys of neither are still refused (a typo is a 400).
 */
export function acceptingReadBack<W extends z.ZodRawShape>(write: z.ZodObject<W>, read: z.ZodObject) {
  const readOnlyKeys = Object.keys(read.shape).filter((key) => !Object.hasOwn(write.shape, key));
  const readOnly = Object.fromEntries(
    readOnlyKeys.map((key) => [key, z.optional(read.shape[key]!).meta({ readOnly: true, description: 'Read-only: ignored' })]),
  );
  return z.strictObject({ ...readOnly, ...write.shape }).transform((body) => {
    const writable: Record<string, unknown> = { ...body };
    for (const key of readOnlyKeys) delete writable[key];
    return writable as z.output<z.ZodObject<W, z.core.$strict>>;
  });
}
