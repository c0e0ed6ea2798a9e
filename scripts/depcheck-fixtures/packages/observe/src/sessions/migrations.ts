// Allowed: the frozen history's index.ts. Breaks feature-migrations-use-no-other-feature: another
// feature's code (through its index.ts, which other code of a feature may use).
import { history } from '../migration-history/index.ts';
import { derive } from '../events/index.ts';

export const sessionsMigrations = { ...history, '0002_second': derive };
