import { lazy, Suspense, useEffect, useState, type ComponentType, type ReactNode } from 'react';
import {
  ApiError,
  credentials,
  gate,
  hasGateScope,
  observe,
  onRequestsChanged,
  onUnauthorized,
  setCredentials,
  type Credentials,
  type Service,
} from './api.ts';
import { timeAgo } from './format.ts';
import { setTheme, useTheme } from './theme.ts';
import { Link, match, navigate, useLocation } from './router.tsx';
import { Badge, Empty, Loading, Page, useAsync } from './ui.tsx';
import { SignInPage } from './pages/SignIn.tsx';

// Pages load on first visit (sign-in and the shell come first; each page is its own small file).
const page = <K extends string>(load: () => Promise<Record<K, ComponentType<never>>>, name: K) =>
  lazy(async () => ({ default: (await load())[name] as ComponentType<{ id?: string }> }));
const OverviewPage = page(() => import('./pages/Overview.tsx'), 'OverviewPage');
const SessionsPage = page(() => import('./pages/Sessions.tsx'), 'SessionsPage');
const SessionDetailPage = page(() => import('./pages/SessionDetail.tsx'), 'SessionDetailPage');
const ComparePage = page(() => import('./pages/Compare.tsx'), 'ComparePage');
const ReplayPage = page(() => import('./pages/Replay.tsx'), 'ReplayPage');
const AgentsPage = page(() => import('./pages/Agents.tsx'), 'AgentsPage');
const AgentDetailPage = page(() => import('./pages/Agents.tsx'), 'AgentDetailPage');
const AlertsPage = page(() => import('./pages/Alerts.tsx'), 'AlertsPage');
const LlmPage = page(() => import('./pages/Llm.tsx'), 'LlmPage');
const LlmCallPage = page(() => import('./pages/LlmCalls.tsx'), 'LlmCallPage');
const BenchmarksPage = page(() => import('./pages/Benchmarks.tsx'), 'BenchmarksPage');
const BenchmarkDetailPage = page(() => import('./pages/Benchmarks.tsx'), 'BenchmarkDetailPage');
const GuardrailsPage = page(() => import('./pages/Guardrails.tsx'), 'GuardrailsPage');
const RecallPage = page(() => import('./pages/Recall.tsx'), 'RecallPage');
const ReflectPage = page(() => import('./pages/Reflect.tsx'), 'ReflectPage');
const OptimizePage = page(() => import('./pages/Optimize.tsx'), 'OptimizePage');
const DatasetsPage = page(() => import('./pages/Datasets.tsx'), 'DatasetsPage');
const DatasetDetailPage = page(() => import('./pages/Datasets.tsx'), 'DatasetDetailPage');
const EvalRunPage = page(() => import('./pages/Datasets.tsx'), 'EvalRunPage');
const EvaluatorsPage = page(() => import('./pages/Evaluators.tsx'), 'EvaluatorsPage');
const SettingsPage = page(() => import('./pages/Settings.tsx'), 'SettingsPage');
const StatsPage = page(() => import('./pages/Stats.tsx'), 'StatsPage');
const ApprovalsPage = page(() => import('./pages/Approvals.tsx'), 'ApprovalsPage');
const ApprovalDetailPage = page(() => import('./pages/Approvals.tsx'), 'ApprovalDetailPage');
const PoliciesPage = page(() => import('./pages/Policies.tsx'), 'PoliciesPage');
const ApproversPage = page(() => import('./pages/Approvers.tsx'), 'ApproversPage');
const WebhooksPage = page(() => import('./pages/Webhooks.tsx'), 'WebhooksPage');
const GrantsPage = page(() => import('./pages/Grants.tsx'), 'GrantsPage');
const BudgetsPage = page(() => import('./pages/Budgets.tsx'), 'BudgetsPage');
const KeysPage = page(() => import('./pages/Keys.tsx'), 'KeysPage');
const AuditPage = page(() => import('./pages/Audit.tsx'), 'AuditPage');
const ChangesPage = page(() => import('./pages/Changes.tsx'), 'ChangesPage');

interface Route {
  pattern: string;
  /** The credential the page needs; `any`: it shows what the signed-in services give. */
  service: Service | 'any';
  /** The page's entry in the sidebar, under the group of that title. */
  nav?: [group: string, label: string];
  render: (params: Record<string, string>) => ReactNode;
}

const ROUTES: Route[] = [
  { pattern: '/', service: 'observe', nav: ['Observe', 'Overview'], render: () => <OverviewPage /> },
  { pattern: '/sessions', service: 'observe', nav: ['Observe', 'Sessions'], render: () => <SessionsPage /> },
  { pattern: '/sessions/:id', service: 'observe', render: (p) => <SessionDetailPage id={p.id!} /> },
  { pattern: '/compare', service: 'observe', render: () => <ComparePage /> },
  { pattern: '/sessions/:id/replay', service: 'observe', render: (p) => <ReplayPage id={p.id!} /> },
  { pattern: '/agents', service: 'observe', nav: ['Observe', 'Agents'], render: () => <AgentsPage /> },
  { pattern: '/agents/:id', service: 'observe', render: (p) => <AgentDetailPage id={p.id!} /> },
  { pattern: '/llm', service: 'observe', nav: ['Observe', 'LLM calls'], render: () => <LlmPage /> },
  { pattern: '/llm/calls/:id', service: 'observe', render: (p) => <LlmCallPage id={p.id!} /> },
  { pattern: '/alerts', service: 'observe', nav: ['Observe', 'Alerts'], render: () => <AlertsPage /> },
  { pattern: '/benchmarks', service: 'observe', nav: ['Observe', 'Benchmarks'], render: () => <BenchmarksPage /> },
  { pattern: '/benchmarks/:id', service: 'observe', render: (p) => <BenchmarkDetailPage id={p.id!} /> },
  { pattern: '/guardrails', service: 'observe', nav: ['Observe', 'Guardrails'], render: () => <GuardrailsPage /> },
  { pattern: '/recall', service: 'observe', nav: ['Observe', 'Recall search'], render: () => <RecallPage /> },
  { pattern: '/insights', service: 'observe', nav: ['Observe', 'Insights'], render: () => <ReflectPage /> },
  { pattern: '/cost-advice', service: 'observe', nav: ['Observe', 'Cost advice'], render: () => <OptimizePage /> },
  { pattern: '/datasets', service: 'observe', nav: ['Evaluate', 'Datasets'], render: () => <DatasetsPage /> },
  { pattern: '/datasets/:id', service: 'observe', render: (p) => <DatasetDetailPage id={p.id!} /> },
  { pattern: '/runs/:id', service: 'observe', render: (p) => <EvalRunPage id={p.id!} /> },
  { pattern: '/evaluators', service: 'observe', nav: ['Evaluate', 'Evaluators'], render: () => <EvaluatorsPage /> },
  { pattern: '/approvals', service: 'gate', nav: ['Approvals', 'Approval queue'], render: () => <ApprovalsPage /> },
  { pattern: '/approvals/:id', service: 'gate', render: (p) => <ApprovalDetailPage id={p.id!} /> },
  { pattern: '/audit', service: 'gate', nav: ['Approvals', 'Audit log'], render: () => <AuditPage /> },
  { pattern: '/policies', service: 'gate', nav: ['Approvals', 'Policies'], render: () => <PoliciesPage /> },
  { pattern: '/approvers', service: 'gate', nav: ['Approvals', 'Approvers'], render: () => <ApproversPage /> },
  { pattern: '/grants', service: 'gate', nav: ['Approvals', 'Grants'], render: () => <GrantsPage /> },
  { pattern: '/budgets', service: 'gate', nav: ['Approvals', 'Budgets'], render: () => <BudgetsPage /> },
  { pattern: '/webhooks', service: 'gate', nav: ['Approvals', 'Webhooks'], render: () => <WebhooksPage /> },
  { pattern: '/keys', service: 'gate', nav: ['Approvals', 'API keys'], render: () => <KeysPage /> },
  { pattern: '/changes', service: 'any', nav: ['Administration', 'Change log'], render: () => <ChangesPage /> },
  { pattern: '/settings', service: 'observe', nav: ['Administration', 'Retention and configuration'], render: () => <SettingsPage /> },
  { pattern: '/stats', service: 'observe', nav: ['Administration', 'Storage and spend'], render: () => <StatsPage /> },
];

/** The sidebar: each group in the order its first page comes in ROUTES. */
const NAV = ROUTES.reduce<{ title: string; links: { to: string; label: string }[] }[]>((groups, route) => {
  if (!route.nav) return groups;
  const [title, label] = route.nav;
  let group = groups.find((g) => g.title === title);
  if (!group) {
    group = { title, links: [] };
    groups.push(group);
  }
  group.links.push({ to: route.pattern, label });
  return groups;
}, []);

function isCurrent(to: string, path: string): boolean {
  return to === '/' ? path === '/' : path === to || path.startsWith(`${to}/`);
}

function PendingCount() {
  const pending = useAsync((signal) => gate('GET /api/requests', { query: { status: 'pending', limit: 500 }, signal }), [], { pollMs: 10_000 });
  useEffect(() => onRequestsChanged(pending.reload), [pending.reload]);
  const count = pending.data?.length ?? 0;
  if (count === 0) return null;
  return (
    <Badge tone="warn" title={`${count} pending`}>
      {count >= 500 ? '500+' : count}
      <span className="visually-hidden"> pending</span>
    </Badge>
  );
}

/**
 * Loud while observe's open first-key bootstrap is reachable beyond its machine (HOST not loopback,
 * no key yet): anyone who reaches it could create the first admin key. Gone once a key exists.
 */
function ExposedBootstrapWarning() {
  const health = useAsync((signal) => observe('GET /api/health', { token: null, signal }), [], { pollMs: 15_000 });
  if (health.data?.firstKeyBootstrap !== 'exposed') return null;
  return (
    <p className="topbar-warning" role="alert">
      Observe listens beyond this machine and has no API key yet: anyone who can reach it can create the first (admin) key. Create it now on the sign-in page,
      or restart observe with <code>HOST=127.0.0.1</code>.
    </p>
  );
}

export function App() {
  const [creds, setCreds] = useState<Credentials>(credentials());
  const [ended, setEnded] = useState<string | null>(null);
  const location = useLocation();
  // On a narrow screen the navigation is folded behind the menu button; opening a page folds it again.
  const [navOpen, setNavOpen] = useState(false);
  const [navFor, setNavFor] = useState(location.path);
  if (navFor !== location.path) {
    setNavFor(location.path);
    setNavOpen(false);
  }

  useEffect(
    () =>
      onUnauthorized((service: Service, error: ApiError) => {
        const next = service === 'observe' ? { ...credentials(), observeKey: null } : { ...credentials(), gate: null };
        setCredentials(next);
        setCreds(next);
        setEnded(
          service === 'observe'
            ? `Observe no longer accepts your API key (${error.message}). Sign in again.`
            : `Your gate session ended (${error.message}). Sign in again to keep deciding.`,
        );
      }),
    [],
  );

  const update = (next: Credentials) => {
    setCredentials(next);
    setCreds(next);
    setEnded(null);
  };

  // Signed out here at once, however slow the gate is to end the session (its token is revoked after).
  const signOut = async () => {
    const gateToken = creds.gate?.token;
    update({ observeKey: null, gate: null });
    navigate('/');
    if (gateToken) await gate('DELETE /api/dashboard/sessions/current', { token: gateToken }).catch(() => undefined);
  };

  const signedIn = creds.observeKey !== null || creds.gate !== null;
  if (!signedIn || location.path === '/signin') {
    return (
      <div className="signin-layout">
        <main id="main">
          <ExposedBootstrapWarning />
          <SignInPage
            current={creds}
            notice={ended}
            onSignedIn={(next) => {
              update(next);
              navigate(location.query.get('next') ?? (next.observeKey ? '/' : '/approvals'), { replace: true });
            }}
          />
        </main>
      </div>
    );
  }

  let content: ReactNode = null;
  let service: Route['service'] | null = null;
  for (const route of ROUTES) {
    const params = match(route.pattern, location.path);
    if (params) {
      service = route.service;
      content = route.render(params);
      break;
    }
  }
  if (content === null) {
    content = (
      <Page title="Page not found">
        <Empty>
          There is no page at <code>{location.path}</code>. <Link to="/">Go to the overview</Link>.
        </Empty>
      </Page>
    );
  } else if (service === 'observe' && !creds.observeKey) {
    content = <NeedsSignIn service="observe" path={location.path} />;
  } else if (service === 'gate' && !creds.gate) {
    content = <NeedsSignIn service="gate" path={location.path} />;
  }

  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <div className={navOpen ? 'layout nav-open' : 'layout'}>
        <nav className="sidebar" id="main-nav" aria-label="Main">
          <Link to={creds.observeKey ? '/' : '/approvals'} className="brand">
            <img src="/favicon.svg" alt="" width={24} height={24} /> Vigil
          </Link>
          {NAV.map((group) => (
            <div key={group.title} className="nav-group">
              <h2 className="nav-title">{group.title}</h2>
              <ul>
                {group.links.map((link) => (
                  <li key={link.to}>
                    <Link to={link.to} aria-current={isCurrent(link.to, location.path) ? 'page' : undefined}>
                      {link.label}
                      {link.to === '/approvals' && creds.gate && <PendingCount />}
                    </Link>
                  </li>
                ))}
              </ul>
            </div>
          ))}
        </nav>
        <div className="content">
          <header className="topbar">
            <button
              type="button"
              className="secondary small menu-button"
              aria-expanded={navOpen}
              aria-controls="main-nav"
              onClick={() => setNavOpen((open) => !open)}
            >
              Menu
            </button>
            <ExposedBootstrapWarning />
            {ended && (
              <p className="topbar-warning" role="alert">
                {ended}
              </p>
            )}
            <div className="whoami">
              {creds.gate ? (
                <span
                  title={`Gate key “${creds.gate.keyName}”, scopes: ${creds.gate.scopes.join(', ')}; session ends ${new Date(creds.gate.expiresAt).toLocaleTimeString()}`}
                >
                  {/* A key without request:decide can only look: the header must not promise decisions. */}
                  {hasGateScope('request:decide') ? 'Deciding as' : 'Viewing as'} <strong>{creds.gate.actor}</strong>
                  {!hasGateScope('request:decide') && ' (this key cannot decide)'} · session ends {timeAgo(creds.gate.expiresAt)}
                </span>
              ) : (
                <span>Not signed in to the gate</span>
              )}
              {(!creds.gate || !creds.observeKey) && (
                <Link to={`/signin?next=${encodeURIComponent(location.path)}`} className="button secondary small">
                  {creds.gate ? 'Add observe key' : 'Sign in to the gate'}
                </Link>
              )}
              <ThemeToggle />
              <button type="button" className="secondary small" onClick={() => void signOut()}>
                Sign out
              </button>
            </div>
          </header>
          <main id="main" tabIndex={-1}>
            <Suspense fallback={<Loading label="Loading the page…" />}>{content}</Suspense>
          </main>
        </div>
      </div>
    </>
  );
}

/** Switches between the light and dark schemes; the choice outlasts the session (theme.ts). */
function ThemeToggle() {
  const theme = useTheme();
  return (
    <button type="button" className="secondary small" aria-pressed={theme === 'dark'} onClick={() => setTheme(theme === 'dark' ? 'light' : 'dark')}>
      Dark scheme
    </button>
  );
}

function NeedsSignIn({ service, path }: { service: Service; path: string }) {
  return (
    <Page title={service === 'gate' ? 'Approvals need a gate key' : 'This page needs an observe key'}>
      <Empty>
        {service === 'gate'
          ? 'You signed in without a gate API key, so approvals, policies, keys and webhooks are not available. '
          : 'You signed in without an observe API key, so sessions, agents and analytics are not available. '}
        <Link to={`/signin?next=${encodeURIComponent(path)}`}>Sign in with {service === 'gate' ? 'a gate' : 'an observe'} key</Link>.
      </Empty>
    </Page>
  );
}
