// Breaks feature-through-index: a file inside another feature.
import { derive } from '../events/derive.ts';

export const next = derive(2);
