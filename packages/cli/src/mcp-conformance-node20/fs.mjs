export * from 'node:fs';

export function globSync() {
  throw new Error('fs.globSync needs Node 22: the conformance tier-check cannot run on Node 20');
}
