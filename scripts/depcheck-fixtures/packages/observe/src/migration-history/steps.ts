// Breaks migration-history-imports-no-feature: frozen history that runs a feature's live code.
import { derive } from '../events/index.ts';

export const history = { '0001_first': derive };
