import { withChanges } from '@vigil/platform';
import type { z } from 'zod';
import { bodyValidationError } from '../errors.ts';

/**
 * A stored rule's definition with a PUT's changes applied, checked whole (a change may be valid
 * alone and not with the rest, e.g. a new condition with the old threshold): a 400 otherwise.
 */
export function changedDefinition<Definition extends object>(
  stored: Definition,
  changes: { [K in keyof Definition]?: Definition[K] | undefined },
  schema: z.ZodType<Definition>,
): Definition {
  const checked = schema.safeParse(withChanges(stored, changes));
  if (!checked.success) throw bodyValidationError(checked.error.issues);
  return checked.data;
}
