/**
 * The few things the core needs from its runtime, read through web APIs only, so the same code
 * runs in Node, Bun, Deno, edge workers and browsers.
 */

/** An environment variable where the runtime has `process.env` (Node, Bun, Deno 2); undefined elsewhere. */
export function environment(name: string): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env?.[name];
}

/**
 * A random UUIDv4 for session and call ids. `crypto.randomUUID` exists only in secure contexts:
 * a page served over plain http (a dev server on a LAN address) has just `getRandomValues`.
 */
export function newId(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
