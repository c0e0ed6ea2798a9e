// A request's statuses: stored in its row and its audit entries, and filtered on by the requests list
// and the audit list, two features that each import this feature-free module rather than each other.
export const STATUSES = ['pending', 'approved', 'denied', 'expired'] as const;
export type RequestStatus = (typeof STATUSES)[number];
