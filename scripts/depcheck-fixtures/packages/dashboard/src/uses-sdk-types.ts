// Allowed: the dashboard imports the SDK's generated API types, which leave nothing in the bundle.
import type { ObservePaths } from '@vigil/sdk/types';

export type Paths = ObservePaths;
