import { ServiceError, type ZodApp } from '@vigil/platform';
import { systemActor } from '../auth/index.ts';
import type { GateConfig } from '../config.ts';
import type { ApproverDirectory } from '../approvers/index.ts';
import { approversAt } from '../escalation/index.ts';
import type { RequestService } from '../requests/index.ts';
import { storedDecision, type RequestRow } from '../requests/index.ts';
import { decidersFor, discordMayDecide, slackGroups, slackListed } from './deciders.ts';
import type { ChatNotifier } from './notifier.ts';
import type { SlackPlatform } from './platforms.ts';
import { actorText, APPROVE, DENY, discordMessage, discordReasonModal, REASON_INPUT, REASON_MODAL, requestView, type ChatPlatformName } from './render.ts';

type Decision = 'approved' | 'denied';
type Log = ZodApp['log'];

/** The parts of Slack's interaction payloads (block_actions, view_submission) that deciding reads. */
export interface SlackInteraction {
  type?: string;
  trigger_id?: string;
  user?: { id?: string; username?: string; name?: string };
  channel?: { id?: string };
  container?: { channel_id?: string };
  actions?: { action_id?: string; value?: string }[];
  view?: { callback_id?: string; private_metadata?: string; state?: { values?: Record<string, Record<string, { value?: string | null }>> } };
}

/** The parts of a Discord interaction that deciding reads. */
export interface DiscordInteraction {
  type?: number;
  member?: { user?: { id?: string; username?: string }; roles?: string[] };
  user?: { id?: string; username?: string };
  data?: { custom_id?: string; components?: { components?: { custom_id?: string; value?: string }[] }[] };
}

const PING = 1;
const MESSAGE_COMPONENT = 3;
const MODAL_SUBMIT = 5;
const PONG = 1;
const CHANNEL_MESSAGE = 4;
const UPDATE_MESSAGE = 7;
const MODAL = 9;
const EPHEMERAL = 64;

function decisionOf(action: string | undefined): Decision | null {
  return action === APPROVE ? 'approved' : action === DENY ? 'denied' : null;
}

function pastTense(request: RequestRow, platform: ChatPlatformName): string {
  return `This request was already ${request.status}${request.decided_by === null ? '' : ` by ${actorText(request.decided_by, platform)}`}.`;
}

/** The error code of a refused decision (already decided, reason required), or rethrows anything else. */
function refusal(error: unknown): string {
  if (error instanceof ServiceError && (error.status === 409 || error.status === 400)) return error.message;
  throw error;
}

/**
 * Decisions from chat: a click (or a reason modal's submission) from a user the deciders include
 * decides the request through the one decision path (RequestService.decide: audit entry, webhooks,
 * observe forwarding, exactly one winner), with decidedBy `slack:<user id>` or `discord:<user id>`.
 * A click from anyone else is refused with a message only they see and an audit entry.
 */
export class ChatInteractions {
  constructor(
    private readonly config: GateConfig,
    private readonly requests: RequestService,
    private readonly notifier: ChatNotifier,
    private readonly log: Log,
    private readonly approvers: ApproverDirectory,
  ) {}

  /**
   * An escalated request is decided by its rule's approvers and those of every tier it has reached;
   * `group:<name>` stands for the group's members.
   */
  private async decidersOf(request: RequestRow, platform: ChatPlatformName): Promise<string[]> {
    const decision = storedDecision(request);
    const approvers = await this.approvers.expand(approversAt(decision, request.escalation_tier));
    return decidersFor(platform, approvers, this.config.chat[platform]?.deciders ?? []);
  }

  /** The platform user ids whose authority a user holds now: their own, and those of whoever delegated to them on this platform. */
  private async actingFor(platform: ChatPlatformName, userId: string): Promise<string[]> {
    const prefix = `${platform}:`;
    return (await this.approvers.actingFor(`${prefix}${userId}`)).filter((name) => name.startsWith(prefix)).map((name) => name.slice(prefix.length));
  }

  private requiresReason(request: RequestRow): boolean {
    return storedDecision(request).requireReason;
  }

  /** Work a click's answer need not wait for (an ephemeral note, opening a modal): failures are logged. */
  private background(platform: ChatPlatformName, work: Promise<unknown>): void {
    void work.catch((error: unknown) => this.log.warn({ err: error, platform }, 'chat call failed'));
  }

  private async refuse(request: RequestRow, platform: ChatPlatformName, user: { id: string; name: string | null }, attempted: Decision): Promise<void> {
    await this.requests.refuseDecision(request.id, systemActor(`${platform}:${user.id}`), {
      platform,
      userName: user.name,
      attempted,
      reason: 'not among the deciders of this request',
    });
  }

  private async slackMayDecide(slack: SlackPlatform, request: RequestRow, userId: string): Promise<boolean> {
    const deciders = await this.decidersOf(request, 'slack');
    const acting = await this.actingFor('slack', userId);
    if (acting.some((id) => slackListed(deciders, id))) return true;
    for (const group of slackGroups(deciders)) {
      const members = await slack.groupMembers(group);
      if (acting.some((id) => members.includes(id))) return true;
    }
    return false;
  }

  /** A verified Slack interaction; answers the HTTP body (undefined: an empty 200). */
  async slack(payload: SlackInteraction): Promise<unknown> {
    const slack = this.notifier.platform('slack') as SlackPlatform | undefined;
    const userId = payload.user?.id;
    if (slack === undefined || userId === undefined) return undefined;
    const user = { id: userId, name: payload.user?.username ?? payload.user?.name ?? null };
    if (payload.type === 'block_actions') {
      const action = payload.actions?.[0];
      const decision = decisionOf(action?.action_id);
      const channel = payload.channel?.id ?? payload.container?.channel_id;
      if (decision === null || action?.value === undefined || channel === undefined) return undefined;
      const note = (text: string) => this.background('slack', slack.ephemeral(channel, user.id, text));
      const request = await this.requests.get(action.value);
      if (request === undefined) return note('This request no longer exists.');
      if (!(await this.slackMayDecide(slack, request, user.id))) {
        await this.refuse(request, 'slack', user, decision);
        return note("You may not decide this request: ask a decider, or an administrator to add you to SLACK_DECIDERS or the policy's approvers.");
      }
      if (request.status !== 'pending') return note(pastTense(request, 'slack'));
      if (this.requiresReason(request)) {
        if (payload.trigger_id === undefined) return note('This decision needs a reason: decide it in the dashboard.');
        this.background('slack', slack.openReasonModal(payload.trigger_id, requestView(request), decision, channel));
        return undefined;
      }
      try {
        await this.requests.decide(request.id, decision, undefined, systemActor(`slack:${user.id}`), { platform: 'slack', userName: user.name });
      } catch (error) {
        note(refusal(error));
      }
      return undefined;
    }
    if (payload.type === 'view_submission' && payload.view?.callback_id === REASON_MODAL) {
      const meta = JSON.parse(payload.view.private_metadata ?? '{}') as { requestId?: string; decision?: string };
      const decision = meta.decision === 'approved' || meta.decision === 'denied' ? meta.decision : null;
      const reason = payload.view.state?.values?.[REASON_INPUT]?.[REASON_INPUT]?.value?.trim() ?? '';
      const fail = (message: string) => ({ response_action: 'errors', errors: { [REASON_INPUT]: message } });
      if (decision === null || meta.requestId === undefined) return fail("This form is not one of Vigil's.");
      if (reason === '') return fail('A reason is required.');
      const request = await this.requests.get(meta.requestId);
      if (request === undefined) return fail('This request no longer exists.');
      if (!(await this.slackMayDecide(slack, request, user.id))) {
        await this.refuse(request, 'slack', user, decision);
        return fail('You may not decide this request.');
      }
      try {
        await this.requests.decide(request.id, decision, reason, systemActor(`slack:${user.id}`), { platform: 'slack', userName: user.name });
      } catch (error) {
        return fail(refusal(error));
      }
      return undefined;
    }
    return undefined;
  }

  /** A verified Discord interaction; answers the interaction response. */
  async discord(interaction: DiscordInteraction): Promise<unknown> {
    if (interaction.type === PING) return { type: PONG };
    const ephemeral = (content: string) => ({ type: CHANNEL_MESSAGE, data: { content, flags: EPHEMERAL } });
    const author = interaction.member?.user ?? interaction.user;
    const customId = interaction.data?.custom_id ?? '';
    if (author?.id === undefined || (interaction.type !== MESSAGE_COMPONENT && interaction.type !== MODAL_SUBMIT))
      return ephemeral('Vigil does not handle this interaction.');
    const user = { id: author.id, name: author.username ?? null };
    let decision: Decision | null;
    let requestId: string | undefined;
    let reason: string | undefined;
    if (interaction.type === MESSAGE_COMPONENT) {
      const [action, id] = customId.split(':');
      decision = decisionOf(action);
      requestId = id;
    } else {
      const [modal, chosen, id] = customId.split(':');
      decision = modal === REASON_MODAL && (chosen === 'approved' || chosen === 'denied') ? chosen : null;
      requestId = id;
      const field = interaction.data?.components?.flatMap((row) => row.components ?? []).find((component) => component.custom_id === REASON_INPUT);
      reason = field?.value?.trim() ?? '';
      if (reason === '') return ephemeral('A reason is required.');
    }
    if (decision === null || requestId === undefined) return ephemeral('Vigil does not handle this interaction.');
    const request = await this.requests.get(requestId);
    if (request === undefined) return ephemeral('This request no longer exists.');
    const deciders = await this.decidersOf(request, 'discord');
    const acting = await this.actingFor('discord', user.id);
    if (!acting.some((id) => discordMayDecide(deciders, id, id === user.id ? (interaction.member?.roles ?? []) : []))) {
      await this.refuse(request, 'discord', user, decision);
      return ephemeral(
        "You may not decide this request: ask a decider, or an administrator to add you (or your role) to DISCORD_DECIDERS or the policy's approvers.",
      );
    }
    if (request.status !== 'pending') return ephemeral(pastTense(request, 'discord'));
    if (reason === undefined && this.requiresReason(request)) return { type: MODAL, data: discordReasonModal(requestView(request), decision) };
    try {
      const decided = await this.requests.decide(request.id, decision, reason, systemActor(`discord:${user.id}`), { platform: 'discord', userName: user.name });
      return { type: UPDATE_MESSAGE, data: discordMessage(requestView(decided, await this.approvers.progress(decided))) };
    } catch (error) {
      return ephemeral(refusal(error));
    }
  }
}
