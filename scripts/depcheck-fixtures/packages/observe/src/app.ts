// Allowed: a feature's index.ts. Breaks app-uses-feature-index: a file inside a feature.
import { derive } from './events/index.ts';
import { errorName } from './sessions/uses-errors.ts';

export const app = [derive, errorName];
