/**
 * The few things the core needs from its runtime, read through web APIs only, so the same code
 * runs in Node, Bun, Deno, edge workers and browsers.
 */

/** An environment variable where the runtime has `process.env` (Node, Bun, Deno 2); undefined elsewhere. */
export function environment(name: string): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env?.[name];
}

/** What the core uses of Web Crypto (typed here: Node's types have no global `Crypto`). */
interface WebCrypto {
  randomUUID?: () => string;
  getRandomValues<T extends Uint8Array>(array: T): T;
}

/** 16 random bytes: Web Crypto where the runtime has it, else (Node 18 keeps it off the global object) Math.random. */
function randomBytes(): Uint8Array {
  const webCrypto = (globalThis as { crypto?: WebCrypto }).crypto;
  if (webCrypto) return webCrypto.getRandomValues(new Uint8Array(16));
  return Uint8Array.from({ length: 16 }, () => Math.floor(Math.random() * 256));
}

/**
 * A random UUIDv4 for session and call ids (identifiers, not secrets). `crypto.randomUUID` exists
 * only in secure contexts: a page served over plain http (a dev server on a LAN address) has just
 * `getRandomValues`.
 */
export function newId(): string {
  const webCrypto = (globalThis as { crypto?: WebCrypto }).crypto;
  if (typeof webCrypto?.randomUUID === 'function') return webCrypto.randomUUID();
  const bytes = randomBytes();
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
