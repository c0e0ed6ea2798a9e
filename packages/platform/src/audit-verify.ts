// What a verifier of audit logs needs (`vigil verify`), without the service kit: the Merkle
// functions, the checkpoint key functions and strict base64, which depend on node:crypto alone.
export * from './audit-keys.ts';
export * from './audit-heads-format.ts';
export * from './merkle.ts';
export * from './signed-note.ts';
export { canonicalJson, decodeBase64, sha256 } from './crypto.ts';
