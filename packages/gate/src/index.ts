export { buildGateService, type GateOptions, type GateService } from './app.ts';
export { verifyGateSignature, type VerifyDeliveryInput } from './webhooks/index.ts';
