// Breaks services-use-not-each-other: observe imports the gate (they talk over HTTP).
import { buildGateService } from '@vigil/gate';

export const build = buildGateService;
