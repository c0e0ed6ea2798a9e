export { buildObserveService, type ObserveOptions, type ObserveService } from './app.ts';
export { chainHash, verifyChain, type ChainFields } from './events/chain.ts';
