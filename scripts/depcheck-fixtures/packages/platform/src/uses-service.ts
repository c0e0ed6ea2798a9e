// Breaks platform-uses-no-service: the kernel imports a service package by name.
import { buildObserveService } from '@vigil/observe';

export const build = buildObserveService;
