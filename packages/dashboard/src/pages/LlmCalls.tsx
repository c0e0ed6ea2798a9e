import { useState } from 'react';
import { observe, type ObserveAnswer } from '../api.ts';
import { CursorPager, Filters, InlineSelect, Table, type Column } from '../components.tsx';
import { fmtDateTime, fmtDuration, fmtNumber, fmtUsd, timeAgo } from '../format.ts';
import { Link, setQuery, useLocation } from '../router.tsx';
import { Async, Badge, JsonView, Page, Section, Stat, Stats, useAsync } from '../ui.tsx';

type Call = ObserveAnswer<'GET /api/llm-calls'>['calls'][number];
type Detail = ObserveAnswer<'GET /api/llm-calls/{id}'>;
type CallsQuery = NonNullable<Parameters<typeof observe<'GET /api/llm-calls'>>[1]>['query'] & object;

const PAGE_SIZE = 25;

/** The list's orders: each a sort and a direction of GET /api/llm-calls. */
const ORDERS = {
  'time-desc': 'Newest first',
  'time-asc': 'Oldest first',
  'cost-desc': 'Cost, highest first',
  'cost-asc': 'Cost, lowest first',
  'latency-desc': 'Latency, slowest first',
  'latency-asc': 'Latency, fastest first',
  'tokens-desc': 'Tokens, most first',
  'tokens-asc': 'Tokens, fewest first',
} as const;
type OrderKey = keyof typeof ORDERS;
const ORDER_CHOICES = (Object.keys(ORDERS) as OrderKey[]).map((value) => ({ value, label: ORDERS[value] }));
const STATUS_CHOICES = [
  { value: '', label: 'Any status' },
  { value: 'success', label: 'Success' },
  { value: 'error', label: 'Error' },
] as const;
type StatusChoice = (typeof STATUS_CHOICES)[number]['value'];

const statusBadge = (status: Call['status']) => <Badge tone={status === 'error' ? 'bad' : 'good'}>{status}</Badge>;

const CALL_COLUMNS: Column<Call>[] = [
  {
    header: 'Time',
    rowHeader: true,
    title: (c) => fmtDateTime(c.timestamp),
    cell: (c) => <Link to={`/llm/calls/${encodeURIComponent(c.id)}`}>{timeAgo(c.timestamp)}</Link>,
  },
  { header: 'Model', cell: (c) => <code>{c.model ?? '—'}</code> },
  { header: 'Agent', cell: (c) => c.agentId },
  { header: 'Status', cell: (c) => statusBadge(c.status) },
  { header: 'Tokens in / out', num: true, cell: (c) => `${fmtNumber(c.inputTokens)} / ${fmtNumber(c.outputTokens)}` },
  { header: 'Cost', num: true, cell: (c) => fmtUsd(c.costUsd) },
  { header: 'Latency', num: true, cell: (c) => fmtDuration(c.latencyMs) },
  { header: 'Session', cell: (c) => <Link to={`/sessions/${encodeURIComponent(c.sessionId)}`}>{c.sessionId}</Link> },
];

/** The calls themselves (llm_response events), filtered and sorted by the URL's query, a page at a time. */
export function LlmCallList() {
  const { query } = useLocation();
  const model = query.get('model') ?? '';
  const agentId = query.get('agent') ?? '';
  const sessionId = query.get('session') ?? '';
  const status = (STATUS_CHOICES.find((s) => s.value === query.get('status'))?.value ?? '') as StatusChoice;
  const orderKey: OrderKey = (query.get('order') ?? '') in ORDERS ? (query.get('order') as OrderKey) : 'time-desc';
  const [sort, order] = orderKey.split('-') as [NonNullable<CallsQuery['sort']>, NonNullable<CallsQuery['order']>];
  const filters = JSON.stringify([model, agentId, sessionId, status, orderKey]);
  // The cursors of the pages read before this one, for "Newer"; reset when the filters change.
  const [paging, setPaging] = useState<{ filters: string; cursors: (string | undefined)[] }>({ filters, cursors: [undefined] });
  const cursors = paging.filters === filters ? paging.cursors : [undefined];
  const cursor = cursors.at(-1);
  const [typed, setTyped] = useState({ model, agentId, sessionId });
  const calls = useAsync(
    (signal) =>
      observe('GET /api/llm-calls', {
        query: {
          model: model || undefined,
          agentId: agentId || undefined,
          sessionId: sessionId || undefined,
          status: status || undefined,
          sort,
          order,
          cursor,
          limit: PAGE_SIZE,
        },
        signal,
      }),
    [filters, cursor],
  );
  const apply = () => setQuery({ model: typed.model.trim(), agent: typed.agentId.trim(), session: typed.sessionId.trim() });
  const textField = (id: string, label: string, key: keyof typeof typed, placeholder: string) => (
    <div className="field inline">
      <label htmlFor={id}>{label}</label>
      <input id={id} value={typed[key]} placeholder={placeholder} onChange={(e) => setTyped({ ...typed, [key]: e.target.value })} />
    </div>
  );
  return (
    <Section
      title="Calls"
      actions={
        <InlineSelect
          id="llm-calls-order"
          label="Sort"
          value={orderKey}
          options={ORDER_CHOICES}
          onChange={(key) => setQuery({ order: key === 'time-desc' ? null : key })}
        />
      }
    >
      <Filters
        filtered={model !== '' || agentId !== '' || sessionId !== '' || status !== ''}
        onApply={apply}
        onClear={() => {
          setTyped({ model: '', agentId: '', sessionId: '' });
          setQuery({ model: null, agent: null, session: null, status: null });
        }}
      >
        {textField('llm-calls-model', 'Model', 'model', 'all models')}
        {textField('llm-calls-agent', 'Agent', 'agentId', 'all agents')}
        {textField('llm-calls-session', 'Session', 'sessionId', 'all sessions')}
        <InlineSelect id="llm-calls-status" label="Status" value={status} options={STATUS_CHOICES} onChange={(value) => setQuery({ status: value || null })} />
      </Filters>
      <Async state={calls} label="Loading calls…">
        {(page) =>
          page.calls.length === 0 ? (
            <p className="empty">No LLM calls match.</p>
          ) : (
            <>
              <Table rows={page.calls} columns={CALL_COLUMNS} rowKey={(c) => c.id} caption="LLM calls" testId="llm-calls" />
              <CursorPager
                label="Pages of LLM calls"
                newer={cursors.length > 1 ? () => setPaging({ filters, cursors: cursors.slice(0, -1) }) : undefined}
                older={page.nextCursor ? () => setPaging({ filters, cursors: [...cursors, page.nextCursor ?? undefined] }) : undefined}
              />
            </>
          )
        }
      </Async>
    </Section>
  );
}

/** Content that erasure replaced or crypto-shredding made unreadable: said so, never shown. */
function Withheld({ state, what }: { state: Detail['content'] | Detail['promptContent']; what: string }) {
  if (state === 'erased') return <p className="muted">The {what} was erased (a data subject's erasure): only its figures are kept.</p>;
  if (state === 'sealed') return <p className="muted">The {what} is sealed under a data key that was destroyed: it cannot be read.</p>;
  if (state === 'missing') return <p className="muted">No llm_call event of this session carries this call id.</p>;
  return null;
}

function Price({ call }: { call: Detail }) {
  const price = call.price;
  if (price === null) return <p className="muted">The price table has no price for {call.model ?? 'this model'}: the cost is the one the agent recorded.</p>;
  const source = /^https?:\/\//.test(price.source) ? <a href={price.source}>{price.source}</a> : price.source;
  return (
    <dl className="facts" data-testid="llm-call-price">
      <dt>Model priced</dt>
      <dd>
        <code>
          {price.provider}/{price.model}
        </code>
      </dd>
      <dt>Input</dt>
      <dd>{fmtUsd(price.inputPerMillionUsd)} per 1M tokens</dd>
      <dt>Output</dt>
      <dd>{fmtUsd(price.outputPerMillionUsd)} per 1M tokens</dd>
      <dt>At this price</dt>
      <dd>
        {fmtUsd(price.costAtPriceUsd)} for {fmtNumber(call.inputTokens)} input and {fmtNumber(call.outputTokens)} output tokens (recorded:{' '}
        {fmtUsd(call.costUsd)})
      </dd>
      <dt>Source</dt>
      <dd>
        {source}, as of {price.asOf}
      </dd>
    </dl>
  );
}

function Messages({ messages }: { messages: unknown[] }) {
  return (
    <ol className="messages">
      {messages.map((message, i) => {
        const m = message as { role?: unknown; content?: unknown };
        return (
          <li key={i}>
            <span className="role">{typeof m.role === 'string' ? m.role : 'message'}</span>
            {typeof m.content === 'string' ? <p className="result-text">{m.content}</p> : <JsonView value={message} label={`Message ${i + 1}`} />}
          </li>
        );
      })}
    </ol>
  );
}

/** One LLM call: its figures, the price used, its prompt and completion. */
export function LlmCallPage({ id }: { id: string }) {
  const call = useAsync((signal) => observe('GET /api/llm-calls/{id}', { params: { id }, signal }), [id]);
  return (
    <Page title="LLM call" subtitle={<Link to="/llm">← All LLM calls</Link>}>
      <Async state={call} label="Loading the call…">
        {(c) => (
          <>
            <Section title="Figures" actions={statusBadge(c.status)}>
              <Stats>
                <Stat label="Cost" value={fmtUsd(c.costUsd)} hint="as the agent recorded it" />
                <Stat label="Tokens" value={fmtNumber(c.totalTokens)} hint={`${fmtNumber(c.inputTokens)} in, ${fmtNumber(c.outputTokens)} out`} />
                <Stat label="Latency" value={fmtDuration(c.latencyMs)} />
                <Stat label="Model" value={<code>{c.model ?? '—'}</code>} hint={c.provider ?? undefined} />
              </Stats>
              <p className="muted small">
                {fmtDateTime(c.timestamp)} · agent <code>{c.agentId}</code> · session{' '}
                <Link to={`/sessions/${encodeURIComponent(c.sessionId)}`}>{c.sessionId}</Link>
                {c.finishReason ? ` · finish reason ${c.finishReason}` : ''}
              </p>
            </Section>
            <Section title="Price used">
              <Price call={c} />
            </Section>
            <Section title="Prompt">
              <Withheld state={c.promptContent} what="prompt" />
              {c.prompt && (
                <div data-testid="llm-call-prompt">
                  {c.prompt.systemPrompt !== null && (
                    <>
                      <h3>System prompt</h3>
                      <p className="result-text">{c.prompt.systemPrompt}</p>
                    </>
                  )}
                  <Messages messages={c.prompt.messages} />
                </div>
              )}
            </Section>
            <Section title="Completion">
              <Withheld state={c.content} what="completion" />
              {c.content === 'readable' && (
                <div data-testid="llm-call-completion">
                  {typeof c.completion === 'string' ? <p className="result-text">{c.completion}</p> : <JsonView value={c.completion} label="Completion" />}
                  {c.toolCalls.length > 0 && (
                    <>
                      <h3>Tool calls</h3>
                      <JsonView value={c.toolCalls} label="Tool calls" />
                    </>
                  )}
                </div>
              )}
            </Section>
          </>
        )}
      </Async>
    </Page>
  );
}
