/**
 * Money in USD, exact to the nano-dollar (1e-9 USD, below any price of one token): amounts are
 * added as whole nano-dollars, and every amount answered is the double nearest to its count of
 * nano-dollars, so 0.1 + 0.2 is 0.3 and the JSON shows no float noise. Whole numbers in a double
 * are exact up to 2^53, so sums stay exact up to about $9 million; beyond, they lose only the last
 * bits and never overflow.
 */
export const NANOS_PER_USD = 1e9;

/** Whole nano-dollars of an amount in USD, ties rounded up (as SQL's floor(x·1e9 + 0.5)). */
export const nanosOf = (usd: number): number => Math.floor(usd * NANOS_PER_USD + 0.5);

/** USD of a count of nano-dollars (whole or not: a mean is rounded to the nano-dollar). */
export const usdOf = (nanos: number): number => Math.floor(nanos + 0.5) / NANOS_PER_USD;

/** An amount rounded to the nano-dollar: how every money figure is answered. */
export const roundUsd = (usd: number): number => usdOf(nanosOf(usd));

/** The sum of two amounts, exact to the nano-dollar. */
export const addUsd = (a: number, b: number): number => usdOf(nanosOf(a) + nanosOf(b));
