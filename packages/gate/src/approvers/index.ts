// Who may decide: approver groups, delegations (out of office) and requests that need several
// approvals from distinct deciders (docs/guide/approvers.md).
import { defineFeature } from '@vigil/platform';
import type { Transaction } from 'kysely';
import type { GateFeature } from '../context.ts';
import type { GateSchema } from '../schema.ts';
import type { VoteKeeper } from './quorum.ts';
import { registerApproverRoutes } from './routes.ts';
import { ApproverDirectory } from './service.ts';

export { approversMigrations } from './migrations.ts';
export { outcomeAfter, progressOf, quorumSchema } from './quorum.ts';
export type { Quorum, QuorumProgress, VoteKeeper } from './quorum.ts';
export { approvalProgress, type ApproverDirectory } from './service.ts';
export { DELEGATION_CHANGES, GROUP_CHANGES } from './store.ts';
export type { ApproversTables } from './tables.ts';

/** What the feature needs of the requests feature: somewhere to keep votes. */
interface VoteCounting {
  countVotesWith(keeper: VoteKeeper<Transaction<GateSchema>>): void;
}

/** The routes of groups and delegations; the directory counts the votes of the requests feature. */
export const approversFeature = (requests: VoteCounting): GateFeature<ApproverDirectory> =>
  defineFeature('approvers', ({ app, context }) => {
    const directory = new ApproverDirectory(context.database, context.clock);
    requests.countVotesWith(directory);
    registerApproverRoutes(app, context);
    return directory;
  });
