/**
 * Every outbound call has a deadline; this is the one place that sets it. A caller's own `signal`
 * (e.g. a shutdown) aborts the call too; the deadline still applies.
 */
export async function fetchWithTimeout(url: string | URL, init: RequestInit & { timeoutMs: number }): Promise<Response> {
  const { timeoutMs, signal, ...rest } = init;
  // Not AbortSignal.timeout(): AbortSignal.any() holds its sources weakly on Node 20, so a timeout
  // signal nothing else references can be collected before it fires, and the call then waits
  // forever (outbound.test.ts). The timer holds this controller until the deadline.
  const deadline = new AbortController();
  setTimeout(() => deadline.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), timeoutMs).unref();
  return fetch(url, { ...rest, signal: signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal });
}

/** Appends an API path to a configured base URL, keeping any base path (`http://host/observe` + `/api/x`). */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}
