// Breaks feature-uses-shared-src-root: the service's public entry is not one of the shared root files.
import { service } from '../index.ts';

export const owner = service;
