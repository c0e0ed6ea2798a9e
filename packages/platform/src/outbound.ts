/**
 * Every outbound call has a deadline; this is the one place that sets it. A caller's own `signal`
 * (e.g. a shutdown) aborts the call too; the deadline still applies.
 */
export async function fetchWithTimeout(url: string | URL, init: RequestInit & { timeoutMs: number }): Promise<Response> {
  const { timeoutMs, signal, ...rest } = init;
  const deadline = AbortSignal.timeout(timeoutMs);
  return fetch(url, { ...rest, signal: signal ? AbortSignal.any([signal, deadline]) : deadline });
}

/** Appends an API path to a configured base URL, keeping any base path (`http://host/observe` + `/api/x`). */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}
