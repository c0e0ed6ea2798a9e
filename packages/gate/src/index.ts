export { buildGateService, type GateOptions, type GateService } from './app.ts';
export { verifyGateSignature, type VerifyDeliveryInput } from './webhooks/index.ts';
export { gateConfig, gateConfigFromEnvironment, gateEnvironment, type GateConfig, type GateEnvironment } from './config.ts';
export { gateErrors } from './errors.ts';
