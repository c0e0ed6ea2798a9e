// BRANCH-ONLY PLACEHOLDERS — delete this file (and its use in migrations.ts) when merging.
// Steps 0018 and 0019 are reserved for the approvals branch (issue 39 parts 2–4), which is built at
// the same time; collectMigrations refuses a gap, so until it lands this branch fills the two
// numbers with steps that do nothing. The merge keeps the approvals branch's steps instead.
import type { MigrationStep } from '@vigil/platform';

export const reservedMigrations: Record<string, MigrationStep> = {
  async '0018_reserved_for_approvals'() {},
  async '0019_reserved_for_approvals'() {},
};
