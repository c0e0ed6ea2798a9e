/** `base` with each field that `changes` defines replaced: the resource a partial PUT leaves behind. */
export function withChanges<T extends object>(base: T, changes: { [K in keyof T]?: T[K] | undefined }): T {
  const merged = { ...base };
  for (const key of Object.keys(changes) as (keyof T)[]) {
    const value = changes[key];
    if (value !== undefined) merged[key] = value;
  }
  return merged;
}
