// Breaks sdk-runs-without-the-services: the SDK's product code imports a service.
import { buildObserveService } from '@vigil/observe';

export const build = buildObserveService;
