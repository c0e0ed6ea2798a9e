export { derive } from './derive.ts';
