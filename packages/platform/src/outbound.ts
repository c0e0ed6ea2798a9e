/** Every outbound call has a deadline; this is the one place that sets it. */
export async function fetchWithTimeout(url: string | URL, init: RequestInit & { timeoutMs: number }): Promise<Response> {
  const { timeoutMs, ...rest } = init;
  return fetch(url, { ...rest, signal: AbortSignal.timeout(timeoutMs) });
}
