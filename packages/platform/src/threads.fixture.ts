// A thread for threads.test.ts (named so that the CLI's build does not bundle it as a service's thread).
import { threadId } from 'node:worker_threads';
import { serveThreadRequests } from './threads.ts';

export type FixtureRequest = { echo: string } | { fail: string } | { hang: true } | { exit: number };

serveThreadRequests(async (request: FixtureRequest) => {
  if ('fail' in request) throw new Error(request.fail);
  if ('hang' in request) return new Promise<never>(() => setInterval(() => undefined, 1000));
  if ('exit' in request) process.exit(request.exit);
  return { echo: request.echo, threadId };
});
