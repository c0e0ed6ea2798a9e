import type { FastifySchema } from 'fastify';
import { z } from 'zod';
import type { RouteScope } from './http.ts';

/**
 * The options of a route that takes an API key, as it declares them where it is registered: the
 * scope a key needs and its schema (operationId, summary, tags, …). Only the nesting is shared; each
 * route still names its own scope and operationId.
 */
export function routeOptions<Schema extends FastifySchema & { operationId: string }>(
  scope: RouteScope,
  schema: Schema,
): { config: { scope: RouteScope }; schema: Schema } {
  return { config: { scope }, schema };
}

/** What a route that deletes one resource by its id answers (200). */
export const deletedResponse = z.object({ id: z.string(), deleted: z.literal(true) });

/** The answer of deletedResponse for the resource `id`. */
export function deletedAnswer(id: string): z.infer<typeof deletedResponse> {
  return { id, deleted: true };
}

/**
 * An offset page as the list routes answer it: its rows, mapped, under `key`, the exact `total`,
 * and `hasMore` when rows lie beyond this page.
 */
export function offsetPage<Key extends string, Row, Out>(
  key: Key,
  page: { rows: readonly Row[]; total: number },
  offset: number,
  toOut: (row: Row) => Out,
): Record<Key, Out[]> & { total: number; hasMore: boolean } {
  const items = { [key]: page.rows.map((row) => toOut(row)) } as Record<Key, Out[]>;
  return { ...items, total: page.total, hasMore: offset + page.rows.length < page.total };
}
