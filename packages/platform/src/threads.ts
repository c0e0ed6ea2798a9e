import { Worker, type WorkerOptions } from 'node:worker_threads';

/** In the compiled bundle (packages/cli/build.mjs): each thread script's compiled file, relative to its source folder. */
declare const VIGIL_COMPILED_THREADS: Record<string, string> | undefined;

/**
 * Starts the worker-thread script at `script` (a `*-thread.ts` beside the module that starts it,
 * `new URL('./x-thread.ts', import.meta.url)`): compiled in the bundle, else the TypeScript source
 * run through tsx.
 */
export function startThread(script: URL, options: WorkerOptions): Worker {
  const name = script.pathname.slice(script.pathname.lastIndexOf('/') + 1).replace(/\.ts$/, '');
  const compiled = typeof VIGIL_COMPILED_THREADS === 'undefined' ? undefined : VIGIL_COMPILED_THREADS[name];
  if (compiled !== undefined) return new Worker(new URL(compiled, script), options);
  // From TypeScript sources a thread does not inherit the loader this process registered: it registers tsx itself.
  const loader = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(loader)}).then(({ register }) => { register(); return import(${JSON.stringify(script.href)}); })`;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`), options);
}
