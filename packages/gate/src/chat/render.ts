import { toIso } from '@vigil/platform';
import type { QuorumProgress } from '../approvers/index.ts';
import { storedDecision, type RequestRow } from '../requests/index.ts';
import type { Notice } from '../webhooks/index.ts';

/**
 * What a chat message shows of a request, and how it looks on each platform. Pure functions: the
 * message is rendered from the request as it stands when it is sent, so a post or edit that waited
 * in the queue never shows an older state.
 */

export type ChatPlatformName = 'slack' | 'discord';

/** The ids of the buttons and of the reason modal (Slack action_id / callback_id; Discord custom_id prefixes). */
export const APPROVE = 'vigil_approve';
export const DENY = 'vigil_deny';
export const REASON_MODAL = 'vigil_reason';
export const REASON_INPUT = 'reason';

export interface RequestView {
  id: string;
  action: string;
  status: string;
  urgency: string;
  /** The agent that asked (`context.agentId`), when it said. */
  agent: string | null;
  policy: string | null;
  requireReason: boolean;
  /** The first few parameters, `key: value`, values shortened. */
  params: [string, string][];
  expiresAt: string | null;
  /** The escalation tier reached (0: none) and, while pending, its current deadline. */
  escalationTier: number;
  deadlineAt: string | null;
  /** For a request that needs several approvals: who approved so far, of how many. */
  approvals: QuorumProgress | null;
  decidedBy: string | null;
  decisionReason: string | null;
  confirmed: boolean;
}

const MAX_PARAMS = 8;
const MAX_VALUE = 80;

function shortValue(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null');
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 1)}…` : text;
}

export function requestView(row: RequestRow, approvals: QuorumProgress | null = null): RequestView {
  const params = JSON.parse(row.params) as Record<string, unknown>;
  const context = JSON.parse(row.context) as Record<string, unknown>;
  const decision = storedDecision(row);
  return {
    id: row.id,
    action: row.action,
    status: row.status,
    urgency: row.urgency,
    agent: typeof context.agentId === 'string' ? context.agentId : null,
    policy: decision.policyName,
    requireReason: decision.requireReason,
    params: Object.entries(params)
      .slice(0, MAX_PARAMS)
      .map(([key, value]) => [key, shortValue(value)]),
    expiresAt: row.expires_at === null ? null : toIso(row.expires_at),
    escalationTier: row.escalation_tier,
    approvals,
    deadlineAt: row.status !== 'pending' || row.deadline_at === null ? null : toIso(row.deadline_at),
    decidedBy: row.decided_by,
    decisionReason: row.decision_reason,
    confirmed: row.confirmed_at !== null,
  };
}

/** `slack:U123` → the Slack mention `<@U123>`; `discord:42` → `<@42>` on Discord; anything else as it is. */
export function actorText(actor: string, platform: ChatPlatformName): string {
  const [namespace, ...rest] = actor.split(':');
  return namespace === platform && rest.length > 0 ? `<@${rest.join(':')}>` : actor;
}

/** One line saying how the request ended, or null while it is pending. */
export function outcomeLine(view: RequestView, platform: ChatPlatformName): string | null {
  if (view.status === 'pending') return null;
  const by = view.decidedBy === null ? '' : ` by ${actorText(view.decidedBy, platform)}`;
  const reason = view.decisionReason ? ` — ${view.decisionReason}` : '';
  const outcome =
    view.status === 'approved'
      ? `✅ Approved${by}${reason}`
      : view.status === 'denied'
        ? `⛔ Denied${by}${reason}`
        : view.status === 'expired'
          ? `⌛ ${view.decisionReason ?? 'Expired before a decision'}`
          : view.status;
  return view.confirmed ? `${outcome} · executed (confirmed)` : outcome;
}

function summaryText(view: RequestView): string {
  return view.status === 'pending' ? `Approval needed: ${view.action} (${view.urgency})` : `${view.action}: ${view.status}`;
}

function facts(view: RequestView): [string, string][] {
  return [
    ['Urgency', view.urgency],
    ['Agent', view.agent ?? '—'],
    ['Policy', view.policy ?? 'no rule matched (human review)'],
    ['Expires', view.expiresAt ?? 'never'],
    ...(view.approvals === null
      ? []
      : [
          [
            'Approvals',
            `${view.approvals.approvedBy.length} of ${view.approvals.required}${view.approvals.approvedBy.length > 0 ? ` (${view.approvals.approvedBy.join(', ')})` : ''}`,
          ] as [string, string],
        ]),
    ...(view.escalationTier > 0
      ? [['Escalated', `tier ${view.escalationTier}${view.deadlineAt === null ? '' : `, deadline ${view.deadlineAt}`}`] as [string, string]]
      : []),
  ];
}

/** Slack's chat.postMessage / chat.update arguments (Block Kit). */
export function slackMessage(view: RequestView): { text: string; blocks: Record<string, unknown>[] } {
  const mrkdwn = (text: string) => ({ type: 'mrkdwn', text });
  const blocks: Record<string, unknown>[] = [
    { type: 'header', text: { type: 'plain_text', text: `Approval request: ${view.action}`.slice(0, 150) } },
    { type: 'section', fields: facts(view).map(([label, value]) => mrkdwn(`*${label}*\n${value}`)) },
  ];
  if (view.params.length > 0) {
    blocks.push({ type: 'section', text: mrkdwn(view.params.map(([key, value]) => `*${key}*: \`${value.replaceAll('`', "'")}\``).join('\n')) });
  }
  const outcome = outcomeLine(view, 'slack');
  if (outcome === null) {
    blocks.push({
      type: 'actions',
      block_id: 'decision',
      elements: [
        { type: 'button', action_id: APPROVE, style: 'primary', text: { type: 'plain_text', text: 'Approve' }, value: view.id },
        { type: 'button', action_id: DENY, style: 'danger', text: { type: 'plain_text', text: 'Deny' }, value: view.id },
      ],
    });
  } else {
    blocks.push({ type: 'context', elements: [mrkdwn(outcome)] });
  }
  blocks.push({ type: 'context', elements: [mrkdwn(`Request \`${view.id}\``)] });
  return { text: summaryText(view), blocks };
}

/** The Slack modal asking for a reason (views.open); what it decides travels in private_metadata. */
export function slackReasonModal(view: RequestView, decision: 'approved' | 'denied', channel: string): Record<string, unknown> {
  return {
    type: 'modal',
    callback_id: REASON_MODAL,
    private_metadata: JSON.stringify({ requestId: view.id, decision, channel }),
    title: { type: 'plain_text', text: decision === 'approved' ? 'Approve request' : 'Deny request' },
    submit: { type: 'plain_text', text: decision === 'approved' ? 'Approve' : 'Deny' },
    close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: `*${view.action}* — the policy requires a reason.` } },
      {
        type: 'input',
        block_id: REASON_INPUT,
        label: { type: 'plain_text', text: 'Reason' },
        element: { type: 'plain_text_input', action_id: REASON_INPUT, multiline: true },
      },
    ],
  };
}

/** A notice as both platforms show it: a title, labelled facts and a footer naming what it is about. */
export interface NoticeView {
  title: string;
  facts: [string, string][];
  footer: string;
  /** Discord's embed colour: amber for a soft breach or a grant ending, red for a hard breach, blue otherwise. */
  colour: number;
}

const money = (usd: number): string => `$${usd}`;

export function noticeView(notice: Notice, platform: ChatPlatformName): NoticeView {
  if (notice.event === 'budget.breached') {
    const { budget } = notice;
    const hard = budget.level === 'hard';
    return {
      title: `Budget "${budget.name}": ${budget.level} threshold ${money(budget.thresholdUsd)} crossed`,
      facts: [
        ['Spend', `${money(budget.spendUsd)} of ${money(budget.thresholdUsd)} (${budget.window} window)`],
        ['Covers', budget.key === '*' ? 'the whole tenant' : budget.key],
        ['Now', hard ? 'matching requests are denied' : 'matching requests wait for a person'],
        ...(hard ? [['Paused', budget.pausedAgents.length > 0 ? budget.pausedAgents.join(', ') : 'no agent (pauseOnHard is off)'] as [string, string]] : []),
      ],
      footer: `Budget ${budget.id}`,
      colour: hard ? URGENCY_COLOURS.critical! : URGENCY_COLOURS.high!,
    };
  }
  const { grant } = notice;
  const heading = { 'grant.created': 'Grant created', 'grant.revoked': 'Grant revoked', 'grant.used_up': 'Grant used up' }[notice.event];
  const byLabel = { 'grant.created': 'Granted by', 'grant.revoked': 'Revoked by', 'grant.used_up': 'Last use' }[notice.event];
  return {
    title: `${heading}: ${grant.action}`,
    facts: [
      ['Agent', grant.agentId ?? 'any'],
      ['Session', grant.sessionId ?? 'any'],
      ['Until', grant.expiresAt === null ? 'no time limit' : toIso(grant.expiresAt)],
      ['Uses', grant.maxUses === null ? `${grant.uses} (no limit)` : `${grant.uses} of ${grant.maxUses}`],
      [byLabel, actorText(grant.by, platform)],
    ],
    footer: `Grant ${grant.id}`,
    colour: notice.event === 'grant.created' ? URGENCY_COLOURS.normal! : URGENCY_COLOURS.high!,
  };
}

/** Slack's chat.postMessage arguments for a notice. */
export function slackNotice(notice: Notice): { text: string; blocks: Record<string, unknown>[] } {
  const view = noticeView(notice, 'slack');
  return {
    text: view.title,
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: view.title.slice(0, 150) } },
      { type: 'section', fields: view.facts.map(([label, value]) => ({ type: 'mrkdwn', text: `*${label}*\n${value}` })) },
      { type: 'context', elements: [{ type: 'mrkdwn', text: view.footer }] },
    ],
  };
}

/** Discord's message body for a notice. */
export function discordNotice(notice: Notice): Record<string, unknown> {
  const view = noticeView(notice, 'discord');
  return {
    content: `**${view.title}**`,
    embeds: [
      {
        title: view.title.slice(0, 256),
        color: view.colour,
        fields: view.facts.map(([name, value]) => ({ name, value, inline: true })),
        footer: { text: view.footer },
      },
    ],
    allowed_mentions: { parse: [] },
  };
}

const DISCORD_ACTION_ROW = 1;
const DISCORD_BUTTON = 2;
const DISCORD_TEXT_INPUT = 4;
const DISCORD_SUCCESS = 3;
const DISCORD_DANGER = 4;
const DISCORD_PARAGRAPH = 2;
const URGENCY_COLOURS: Record<string, number> = { low: 0x94a3b8, normal: 0x3b82f6, high: 0xf59e0b, critical: 0xef4444 };

/** A Discord button's custom_id: the action and the request, `vigil_approve:<id>`. */
export function discordCustomId(action: string, requestId: string): string {
  return `${action}:${requestId}`;
}

/** Discord's message body (create / edit message, or an interaction's UPDATE_MESSAGE data). */
export function discordMessage(view: RequestView): Record<string, unknown> {
  const outcome = outcomeLine(view, 'discord');
  const fields = facts(view).map(([name, value]) => ({ name, value, inline: true }));
  for (const [key, value] of view.params) fields.push({ name: key, value: value === '' ? '—' : value, inline: false });
  return {
    content: outcome === null ? `Approval needed: **${view.action}**` : `**${view.action}**: ${outcome}`,
    embeds: [
      {
        title: `Approval request: ${view.action}`.slice(0, 256),
        color: URGENCY_COLOURS[view.urgency] ?? URGENCY_COLOURS.normal,
        fields: fields.slice(0, 25),
        footer: { text: `Request ${view.id}` },
      },
    ],
    components:
      outcome === null
        ? [
            {
              type: DISCORD_ACTION_ROW,
              components: [
                { type: DISCORD_BUTTON, style: DISCORD_SUCCESS, label: 'Approve', custom_id: discordCustomId(APPROVE, view.id) },
                { type: DISCORD_BUTTON, style: DISCORD_DANGER, label: 'Deny', custom_id: discordCustomId(DENY, view.id) },
              ],
            },
          ]
        : [],
    allowed_mentions: { parse: [] },
  };
}

/** The Discord modal asking for a reason; its custom_id carries the decision and the request. */
export function discordReasonModal(view: RequestView, decision: 'approved' | 'denied'): Record<string, unknown> {
  return {
    custom_id: `${REASON_MODAL}:${decision}:${view.id}`,
    title: (decision === 'approved' ? `Approve ${view.action}` : `Deny ${view.action}`).slice(0, 45),
    components: [
      {
        type: DISCORD_ACTION_ROW,
        components: [
          { type: DISCORD_TEXT_INPUT, custom_id: REASON_INPUT, style: DISCORD_PARAGRAPH, label: 'Reason (the policy requires one)', required: true },
        ],
      },
    ],
  };
}
