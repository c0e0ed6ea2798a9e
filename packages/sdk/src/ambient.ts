/**
 * The session a captured call belongs to. Integrations (observeOpenAI, traceTool, …) take a
 * `session` option; without one they use the ambient session: the one whose `run()` (or
 * ObserveClient.withSession) the call happens inside. Where the runtime has AsyncLocalStorage the
 * ambient session follows async work exactly — `@vigil/sdk/node` installs that scope, and Node,
 * Bun and Deno all load it. Elsewhere (browsers) the fallback scope holds the innermost session
 * whose run() has not finished, which is right for one agent at a time; give concurrent sessions
 * explicitly.
 */
import type { VigilSession } from './session.ts';

export interface SessionScope {
  current(): VigilSession | undefined;
  run<T>(session: VigilSession, fn: () => T): T;
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** Without async context: the sessions whose run() is in progress, innermost last. */
function stackScope(): SessionScope {
  const active: VigilSession[] = [];
  const leave = (session: VigilSession): void => {
    const at = active.lastIndexOf(session);
    if (at >= 0) active.splice(at, 1);
  };
  return {
    current: () => active[active.length - 1],
    run(session, fn) {
      active.push(session);
      let result: ReturnType<typeof fn>;
      try {
        result = fn();
      } catch (error) {
        leave(session);
        throw error;
      }
      if (isPromiseLike(result)) {
        result.then(
          () => leave(session),
          () => leave(session),
        );
      } else leave(session);
      return result;
    },
  };
}

let scope: SessionScope = stackScope();

/** Replaces how the ambient session is tracked (`@vigil/sdk/node` installs AsyncLocalStorage). */
export function setSessionScope(next: SessionScope): void {
  scope = next;
}

/** The session the current code runs inside, if any. */
export function currentSession(): VigilSession | undefined {
  return scope.current();
}

/** Runs `fn` with `session` as the ambient session. */
export function runInSession<T>(session: VigilSession, fn: () => T): T {
  return scope.run(session, fn);
}

/** Where a captured call is recorded: the given session, else the ambient one. */
export type SessionChoice = VigilSession | (() => VigilSession | undefined) | undefined;

export function resolveSession(choice: SessionChoice): VigilSession | undefined {
  return typeof choice === 'function' ? choice() : (choice ?? currentSession());
}

const warned = new Set<string>();

/** Says once per kind of call that calls outside any session are not recorded (they still run). */
export function warnUnrecorded(kind: string): void {
  if (warned.has(kind)) return;
  warned.add(kind);
  console.warn(`vigil: ${kind} ran outside any session and was not recorded; pass { session } or run it inside session.run() / withSession()`);
}
