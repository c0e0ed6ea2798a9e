// Breaks migration-history-only-in-migrations: live code that runs a frozen copy.
import { history } from '../migration-history/index.ts';

export const steps = Object.keys(history);
