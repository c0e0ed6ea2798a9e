// Breaks dashboard-uses-types-only: SDK code would reach the bundle.
import { ObserveClient } from '@vigil/sdk';

export const client = ObserveClient;
