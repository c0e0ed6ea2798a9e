import { useState, type FormEvent } from 'react';
import { ApiError, gate, observe, type Credentials } from '../api.ts';
import { usePageTitle } from '../router.tsx';
import { ErrorMessage, Field, SecretOnce } from '../ui.tsx';

const NAME_KEY = 'vigil.displayName';

/**
 * Sign-in with an API key of each service (either may be left out). The observe key is checked
 * and kept in sessionStorage; the gate key is exchanged for a short-lived dashboard session
 * (POST /api/dashboard/sessions) and only that session token is kept: decisions are recorded by
 * the gate as `dashboard:<name>`.
 */
export function SignInPage({ current, notice, onSignedIn }: { current: Credentials; notice: string | null; onSignedIn: (next: Credentials) => void }) {
  usePageTitle('Sign in');
  const [name, setName] = useState(() => localStorage.getItem(NAME_KEY) ?? '');
  const [observeKey, setObserveKey] = useState('');
  const [gateKey, setGateKey] = useState('');
  const [errors, setErrors] = useState<{ field: string; error: Error }[]>([]);
  const [pending, setPending] = useState(false);
  const [firstKey, setFirstKey] = useState<string | null>(null);
  const [firstKeyError, setFirstKeyError] = useState<Error | null>(null);

  const keepObserve = current.observeKey !== null;
  const keepGate = current.gate !== null;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const found: { field: string; error: Error }[] = [];
    const wantObserve = observeKey.trim() !== '';
    const wantGate = gateKey.trim() !== '';
    if (!wantObserve && !wantGate && !keepObserve && !keepGate)
      found.push({ field: 'keys', error: new Error('Enter an observe API key, a gate API key, or both.') });
    if (wantGate && !name.trim()) found.push({ field: 'name', error: new Error('Enter your name: the gate records your decisions as dashboard:<name>.') });
    setErrors(found);
    if (found.length > 0) return;
    setPending(true);
    const next: Credentials = { ...current };
    try {
      if (wantObserve) {
        try {
          await observe('GET /api/sessions', { query: { limit: 1 }, token: observeKey.trim() });
          next.observeKey = observeKey.trim();
        } catch (error) {
          found.push({
            field: 'observe',
            error: error instanceof ApiError && error.status === 401 ? new Error('Observe did not accept this API key.') : (error as Error),
          });
        }
      }
      if (wantGate) {
        try {
          const session = await gate('POST /api/dashboard/sessions', { body: { name: name.trim() }, token: gateKey.trim() });
          next.gate = {
            token: session.token,
            name: session.name,
            actor: session.actor,
            keyName: session.keyName,
            scopes: session.scopes,
            expiresAt: session.expiresAt,
          };
          localStorage.setItem(NAME_KEY, session.name);
        } catch (error) {
          found.push({
            field: 'gate',
            error: error instanceof ApiError && error.status === 401 ? new Error('The gate did not accept this API key.') : (error as Error),
          });
        }
      }
    } finally {
      setPending(false);
    }
    setErrors(found);
    if (found.length === 0) onSignedIn(next);
  };

  const createFirstKey = async () => {
    setFirstKeyError(null);
    try {
      const created = await observe('POST /api/keys', { body: { name: 'dashboard (first key)' }, token: null });
      setFirstKey(created.key);
      setObserveKey(created.key);
    } catch (error) {
      setFirstKeyError(
        error instanceof ApiError && error.status === 401
          ? new Error(
              'An observe API key already exists, so the first-key shortcut is closed. Use an existing key, or ask its holder to create one for you (POST /api/keys).',
            )
          : (error as Error),
      );
    }
  };

  const errorFor = (field: string) => errors.find((e) => e.field === field)?.error;

  return (
    <div className="signin">
      <h1>
        <img src="/favicon.svg" alt="" width={32} height={32} /> Sign in to Vigil
      </h1>
      <p className="subtitle">Keys are kept in this browser tab only (session storage) and forgotten when it closes.</p>
      {notice && (
        <p className="topbar-warning" role="alert">
          {notice}
        </p>
      )}
      <form onSubmit={(e) => void submit(e)} noValidate aria-describedby={errorFor('keys') ? 'signin-error' : undefined}>
        <Field label="Your name" htmlFor="signin-name" hint="Shown in the audit trail: the gate records your decisions as dashboard:<name>.">
          <input
            name="name"
            autoComplete="name"
            value={name}
            maxLength={100}
            onChange={(e) => setName(e.target.value)}
            aria-invalid={errorFor('name') ? true : undefined}
          />
        </Field>
        {errorFor('name') && <ErrorMessage error={errorFor('name')!} title="Name" />}

        <fieldset>
          <legend>Observe (sessions, agents, analytics)</legend>
          {keepObserve && !observeKey ? <p className="hint">You are signed in to observe. Enter another key to replace it.</p> : null}
          <Field
            label="Observe API key"
            htmlFor="signin-observe"
            hint={
              <>
                Starts with <code>vgl_</code>. Created with <code>POST /api/keys</code>.
              </>
            }
          >
            <input
              name="observeKey"
              type="password"
              autoComplete="off"
              spellCheck={false}
              value={observeKey}
              onChange={(e) => setObserveKey(e.target.value)}
              aria-invalid={errorFor('observe') ? true : undefined}
            />
          </Field>
          {errorFor('observe') && <ErrorMessage error={errorFor('observe')!} title="Observe" />}
          {firstKey ? (
            <SecretOnce label="Your first observe API key (filled in above)." value={firstKey} />
          ) : (
            <p className="hint">
              First start and no observe key yet?{' '}
              <button type="button" className="link" onClick={() => void createFirstKey()}>
                Create the first observe key
              </button>
            </p>
          )}
          {firstKeyError && <ErrorMessage error={firstKeyError} title="First key" />}
        </fieldset>

        <fieldset>
          <legend>Gate (approvals, policies)</legend>
          {keepGate && !gateKey ? <p className="hint">You are signed in to the gate as {current.gate!.actor}. Enter a key to sign in again.</p> : null}
          <Field
            label="Gate API key"
            htmlFor="signin-gate"
            hint={
              <>
                Starts with <code>gk_</code>. At its first start the gate prints an admin key once in the terminal where <code>npm start</code> runs (or uses{' '}
                <code>GATE_ADMIN_KEY</code>). The key itself is not stored: it is exchanged for an 8-hour dashboard session.
              </>
            }
          >
            <input
              name="gateKey"
              type="password"
              autoComplete="off"
              spellCheck={false}
              value={gateKey}
              onChange={(e) => setGateKey(e.target.value)}
              aria-invalid={errorFor('gate') ? true : undefined}
            />
          </Field>
          {errorFor('gate') && <ErrorMessage error={errorFor('gate')!} title="Gate" />}
        </fieldset>

        {errorFor('keys') && (
          <div id="signin-error">
            <ErrorMessage error={errorFor('keys')!} title="Nothing to sign in with" />
          </div>
        )}
        <button type="submit" disabled={pending}>
          {pending ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </div>
  );
}
