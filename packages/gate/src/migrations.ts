// The gate's migration steps: the frozen history (0001–0009, migration-history/) and, after it, the
// steps each feature declares beside the tables it owns (chat/ from 0010), collected in name order (a
// duplicate or missing number fails at startup).
import { collectMigrations } from '@vigil/platform';
import { chatMigrations } from './chat/index.ts';
import { gateHistory } from './migration-history/index.ts';

export const gateMigrations = collectMigrations(gateHistory, chatMigrations);
