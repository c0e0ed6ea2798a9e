// Allowed: another feature through its index.ts.
import { derive } from '../events/index.ts';

export const next = derive(1);
