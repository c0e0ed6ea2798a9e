// Allowed: a shared file of the service's src root.
import { notFound } from '../errors.ts';

export const errorName = notFound;
