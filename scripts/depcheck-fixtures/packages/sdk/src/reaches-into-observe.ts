// Breaks no-cross-package-src: another package's src/ by a relative path.
import { derive } from '../../observe/src/events/derive.ts';

export const reached = derive;
