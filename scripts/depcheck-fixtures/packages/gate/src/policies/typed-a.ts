// Allowed: a cycle whose one way is type-only (erased at run time) with typed-b.ts.
import type { Shape } from './typed-b.ts';

export const origin: Shape = { x: 0 };
