import { a } from './cycle-a.ts';

export const b = (): string => 'b';
export const twice = (): string => a() + a();
