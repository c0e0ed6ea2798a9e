// Resolves the conformance bundles' `fs` (0.1.16, and the 0.2.0-alpha.12 alias) to fs.mjs (node:fs plus a globSync that refuses); every other import as usual.
const fsWithGlobSync = new URL('./fs.mjs', import.meta.url).href;

export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && /\/@modelcontextprotocol\/conformance(-2026)?\//.test(context.parentURL ?? '')) {
    return { url: fsWithGlobSync, shortCircuit: true };
  }
  return next(specifier, context);
}
