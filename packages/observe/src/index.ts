export { buildObserveService, type ObserveOptions, type ObserveService } from './app.ts';
export {
  observeConfig,
  observeConfigFromEnvironment,
  observeEnvironment,
  type ObserveConfig,
  type ObserveEnvironment,
} from './config.ts';
