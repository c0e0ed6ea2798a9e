import { createServer } from 'node:http';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';

const factory = (ctx: { era: string }) => {
  const mcp = new McpServer({ name: 'proto', version: '1.0.0' }, { capabilities: { tools: {}, logging: {} } });
  mcp.registerTool('echo', { description: 'Echo', inputSchema: z.object({ text: z.string().min(1), n: z.number().int().optional() }), annotations: { readOnlyHint: true } }, async ({ text }) => ({ content: [{ type: 'text', text: `${ctx.era}:${text}` }], structuredContent: { text } }));
  return mcp;
};
const handler = createMcpHandler(factory, { responseMode: 'json' });
const server = createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks).toString();
  console.log('>>', req.method, JSON.stringify(req.headers['mcp-protocol-version']), body.slice(0, 400));
  const response = await handler.fetch(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers: req.headers as Record<string, string>, body: req.method === 'POST' ? body : undefined }));
  const text = await response.text();
  console.log('<<', response.status, [...response.headers].map((h) => h.join(':')).join(' '), text.slice(0, 600));
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(text);
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = new URL(`http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`);
for (const mode of ['legacy', 'auto'] as const) {
  console.log('======== mode', mode);
  const client = new Client({ name: 'c', version: '1' }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(url));
  console.log('negotiated', client.getNegotiatedProtocolVersion());
  const tools = await client.listTools();
  console.log(JSON.stringify(tools.tools[0]));
  console.log(JSON.stringify(await client.callTool({ name: 'echo', arguments: { text: 'hi' } })));
  console.log(JSON.stringify(await client.callTool({ name: 'echo', arguments: { text: '' } })).slice(0, 300));
  try { console.log(JSON.stringify(await client.callTool({ name: 'nope', arguments: {} }))); } catch (e) { console.log('ERR', (e as Error).message); }
  try { console.log(JSON.stringify(await client.setLoggingLevel('info'))); } catch (e) { console.log('ERR', (e as Error).message); }
  console.log(JSON.stringify(await client.ping()));
  await client.close();
}
server.close();
