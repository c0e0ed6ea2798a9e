/**
 * `npm run bench` (MCP part): what /mcp adds over calling the route it wraps. Against a real observe
 * server (its own process, SQLite unless DATABASE_URL is set), one request at a time: GET
 * /api/sessions?limit=1 directly, then the query_sessions tool doing the same through /mcp, as a
 * 2026-07-28 request (no handshake) and as a 2025-11-25 one (a stateless server answers each
 * 2025 request without one too), taken in turn. BENCH_MCP_CALLS calls each (default 2,000, after 200
 * warm-up rounds).
 */
import { createObserveKey, startObserve, stopServer } from './server.ts';
import { percentile, printTable, type Row } from './table.ts';

const CALLS = Number(process.env.BENCH_MCP_CALLS ?? 2_000);
const WARM_UP = 200;

const observe = await startObserve('mcp');
try {
  const key = await createObserveKey(observe.base);
  const auth = { authorization: `Bearer ${key}` };
  const mcpHeaders = { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const toolCall = (version: string) => ({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: {
      name: 'query_sessions',
      arguments: { limit: 1 },
      ...(version === '2026-07-28' && {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': version,
          'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      }),
    },
  });
  const cases: Array<[string, () => Promise<Response>]> = [
    ['GET /api/sessions?limit=1', () => fetch(`${observe.base}/api/sessions?limit=1`, { headers: auth })],
    ...['2026-07-28', '2025-11-25'].map((version): [string, () => Promise<Response>] => {
      const body = JSON.stringify(toolCall(version));
      const headers = {
        ...mcpHeaders,
        'mcp-protocol-version': version,
        ...(version === '2026-07-28' && { 'mcp-method': 'tools/call', 'mcp-name': 'query_sessions' }),
      };
      return [`/mcp tools/call query_sessions (${version})`, () => fetch(`${observe.base}/mcp`, { method: 'POST', headers, body })];
    }),
  ];
  // Round robin, so that whatever else the server (or the machine) does meanwhile weighs on each alike.
  const times = cases.map((): number[] => []);
  for (let i = 0; i < WARM_UP + CALLS; i++) {
    for (const [c, [name, call]] of cases.entries()) {
      const started = performance.now();
      const response = await call();
      const text = await response.text();
      if (response.status !== 200 || text.includes('"isError":true')) throw new Error(`${name}: ${response.status} ${text}`);
      if (i >= WARM_UP) times[c]!.push(performance.now() - started);
    }
  }
  const rows: Row[] = cases.map(([name], c) => {
    const sorted = times[c]!.sort((x, y) => x - y);
    const added = c === 0 ? '' : `, +${(percentile(sorted, 50) - percentile(times[0]!, 50)).toFixed(2)} ms p50`;
    return [`${name}: p50 / p95`, '', `${percentile(sorted, 50).toFixed(2)} / ${percentile(sorted, 95).toFixed(2)} ms${added}`];
  });
  printTable(rows);
} finally {
  await stopServer(observe.child, observe.dataDir, observe.schema);
}
