// Resolves the conformance bundle's `fs` to fs.mjs (node:fs plus a globSync that refuses); every other import as usual.
const fsWithGlobSync = new URL('./fs.mjs', import.meta.url).href;

export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes('/@modelcontextprotocol/conformance/')) {
    return { url: fsWithGlobSync, shortCircuit: true };
  }
  return next(specifier, context);
}
