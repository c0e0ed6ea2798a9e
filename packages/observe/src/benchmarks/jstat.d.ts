// Minimal typings for the parts of `jstat` (CommonJS, ships no types) that the benchmarks use.
declare module 'jstat' {
  interface JStatStudentT {
    pdf(x: number, dof: number): number;
    cdf(x: number, dof: number): number;
    inv(p: number, dof: number): number;
  }
  interface JStatStatic {
    /** ln Γ(x) for x > 0. */
    gammaln(x: number): number;
    /** ln B(a, b). */
    betaln(a: number, b: number): number;
    /** Regularized incomplete beta I_x(a, b); only about 3e-7 relative precision. */
    ibeta(x: number, a: number, b: number): number;
    studentt: JStatStudentT;
  }
  const jStat: JStatStatic;
  export = jStat;
}
