// Breaks no-runtime-cycle with cycle-b.ts.
import { b } from './cycle-b.ts';

export const a = (): string => `a${b()}`;
