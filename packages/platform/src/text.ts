// RFC 8785 forbids lone surrogates, and PostgreSQL cannot store U+0000 in text or jsonb.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/** Path of the first string (key or value) in a JSON value that cannot be hashed or stored, or null. */
export function unstorableTextPath(value: unknown): (string | number)[] | null {
  const path: (string | number)[] = [];
  return findUnstorable(value, path) ? path : null;
}

// Walks with one shared path (pushed and popped), so a clean body allocates nothing per value.
function findUnstorable(value: unknown, path: (string | number)[]): boolean {
  if (typeof value === 'string') return UNSTORABLE.test(value);
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      if (findUnstorable(value[i], path)) return true;
      path.pop();
    }
    return false;
  }
  for (const key in value) {
    path.push(key);
    if (UNSTORABLE.test(key) || findUnstorable((value as Record<string, unknown>)[key], path)) return true;
    path.pop();
  }
  return false;
}
