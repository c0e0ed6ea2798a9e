// What a verifier of audit logs needs (`vigil verify`), without the service kit: the Merkle
// functions and the checkpoint key functions, which depend on node:crypto alone.
export * from './audit-keys.ts';
export * from './merkle.ts';
