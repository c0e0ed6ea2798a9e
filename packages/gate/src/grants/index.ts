// Time-limited grants (docs/guide/grants.md): a human's standing approval of one action for an agent
// or session, for a while and/or N uses. Requests approve through them (requests/ takes each use in
// the request's creation transaction); this feature stores, serves and revokes them.
import { defineFeature } from '@vigil/platform';
import type { GateFeature } from '../context.ts';
import type { RequestService } from '../requests/index.ts';
import { registerGrantRoutes } from './routes.ts';
import { GrantService } from './service.ts';

export { grantsMigrations } from './migrations.ts';
export { GRANT_CHANGES } from './store.ts';
export type { GrantsTables } from './tables.ts';

export const grantsFeature = (requests: RequestService): GateFeature =>
  defineFeature('grants', ({ app, context }) => {
    const grants = new GrantService(context, requests, app.log);
    registerGrantRoutes(app, context, grants);
    requests.approveWithGrants(grants);
  });
