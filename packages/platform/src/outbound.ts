/** Every outbound call has a deadline; this is the one place that sets it. */
export async function fetchWithTimeout(url: string | URL, init: RequestInit & { timeoutMs: number }): Promise<Response> {
  const { timeoutMs, ...rest } = init;
  return fetch(url, { ...rest, signal: AbortSignal.timeout(timeoutMs) });
}

/** Appends an API path to a configured base URL, keeping any base path (`http://host/observe` + `/api/x`). */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}
