// The gate's redaction: a new request's params and context masked before they are hashed or stored
// (docs/guide/redaction.md): the rules and detectors of REDACTION_RULES_FILE and REDACTION_DETECTORS.
// Path rules name `params.…` or `context.…`. The rules that fired are recorded in the request's
// context (`context.redactions`), which its requestHash covers.
import { MaskFailure, type Masker } from '@vigil/platform';
import { gateError } from '../errors.ts';

export const REDACTIONS_FIELD = 'redactions';

interface RequestInput {
  params: Record<string, unknown>;
  context: Record<string, unknown>;
}

/** The input as it is to be stored; 400 when it sets context.redactions itself, 422 when a rule fails (never stored raw). */
export function redactRequestInput<Input extends RequestInput>(redactor: Masker, input: Input): Input {
  if (input.context[REDACTIONS_FIELD] !== undefined) throw gateError('validation', `context.${REDACTIONS_FIELD} is written by the server only`);
  if (!redactor.active) return input;
  try {
    const { roots, counts } = redactor.mask({ params: input.params, context: input.context });
    if (counts.length === 0) return input;
    const redactions = counts.map(({ id, count }) => ({ rule: id, count }));
    return { ...input, params: roots.params, context: { ...roots.context, [REDACTIONS_FIELD]: redactions } };
  } catch (error) {
    throw gateError('redactionFailed', error instanceof MaskFailure ? `redaction rule ${error.message}` : `redaction failed: ${(error as Error).message}`);
  }
}
