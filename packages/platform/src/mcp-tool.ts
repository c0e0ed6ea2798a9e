// What an MCP tool of a service is: one call of one of its routes. Zod only, so `vigil mcp` (stdio)
// can read the services' tool tables without loading the server stack.
import type { z } from 'zod';

/**
 * One MCP tool of a service: a call of one of its own routes. The route runs as if the MCP client
 * had called it with the same credentials (authentication, scope, rate limit, validation), so a
 * tool can never do what its route would refuse.
 */
export interface McpRouteTool<Shape extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  description: string;
  input: Shape;
  readOnly: boolean;
  /** The route the tool calls, as `app.routeTable` names it (`POST /api/events`). */
  route: string;
  /**
   * The URL (path parameters filled in, query string added) and the JSON body of the route call. A
   * method, so a table of tools with their own argument types is a list of `McpRouteTool`.
   */
  request(args: z.infer<z.ZodObject<Shape>>): { url: string; body?: unknown };
  /** Answer the route's JSON as one text block only, without structuredContent (for clients that accept nothing else). */
  textOnly?: boolean;
}

/** Declares a tool with its arguments' type inferred from its input shape. */
export function mcpRouteTool<Shape extends z.ZodRawShape>(tool: McpRouteTool<Shape>): McpRouteTool<Shape> {
  return tool;
}

/** A query string of the defined values (arrays repeat the name); empty when there are none. */
export function queryString(values: Record<string, string | number | boolean | readonly string[] | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) query.append(name, String(item));
  }
  const text = query.toString();
  return text === '' ? '' : `?${text}`;
}
