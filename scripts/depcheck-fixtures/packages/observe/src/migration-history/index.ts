export { history } from './steps.ts';
