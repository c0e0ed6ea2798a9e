export { buildObserveService, type ObserveOptions, type ObserveService } from './app.ts';
