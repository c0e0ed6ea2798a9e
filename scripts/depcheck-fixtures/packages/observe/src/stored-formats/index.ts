// Breaks stored-formats-import-no-feature: a stored format that runs a feature's live code.
import { derive } from '../events/index.ts';

export const recipe = derive;
