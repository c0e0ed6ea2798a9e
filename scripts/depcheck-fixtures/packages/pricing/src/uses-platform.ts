// Breaks pricing-uses-no-package.
import { newId } from '@vigil/platform';

export const id = newId;
