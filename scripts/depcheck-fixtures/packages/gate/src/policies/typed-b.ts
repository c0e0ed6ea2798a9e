import { origin } from './typed-a.ts';

export interface Shape {
  x: number;
}
export const copy = (): Shape => ({ ...origin });
