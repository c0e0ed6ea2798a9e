import { z } from 'zod';
import { groupedInteger } from '@vigil/platform';
import { NODE_KINDS, NODE_STATUSES, TREE_EVENT_LIMIT } from './build.ts';

const nodeFields = {
  id: z.string().meta({ description: "The id of the node's first event" }),
  name: z.string(),
  kind: z.enum(NODE_KINDS),
  status: z.enum(NODE_STATUSES),
  startTime: z.string(),
  endTime: z.string(),
  durationMs: z.number(),
  eventIds: z.array(z.string()),
  eventTypes: z.array(z.string()),
  span: z.object({ traceId: z.string(), spanId: z.string(), parentSpanId: z.string().nullable() }).nullable(),
  model: z.string().optional(),
  provider: z.string().optional(),
  inputTokens: z.number().optional(),
  outputTokens: z.number().optional(),
  costUsd: z.number().optional(),
  toolName: z.string().optional(),
  error: z.string().optional(),
};

type TreeNodeShape = z.ZodObject<typeof nodeFields & { children: z.ZodArray<TreeNodeShape> }>;

export const treeNodeSchema: TreeNodeShape = z
  .object({
    ...nodeFields,
    get children() {
      return z.array(treeNodeSchema);
    },
  })
  .meta({ id: 'TreeNode' });

export const sessionTreeSchema = z.object({
  sessionId: z.string(),
  startTime: z.string().nullable(),
  endTime: z.string().nullable(),
  durationMs: z.number(),
  eventCount: z.number().int(),
  nodeCount: z.number().int(),
  truncated: z.boolean().meta({ description: `True when the session has more than the ${groupedInteger(TREE_EVENT_LIMIT)} events a tree is built from` }),
  eventLimit: z.number().int(),
  roots: z.array(treeNodeSchema),
});
