import type { Logger } from 'pino';
import type { ClusterData, ExecutionData, ServerData } from '@carapace/models';
import { NOTIFICATION_EVENTS, publicBaseUrl, type ClusterEvent, type Config, type NotificationEvent, type NotificationTargets } from '../config.js';
import type { HealthChange, StatusNotifier } from '../infrastructure/status.scheduler.js';
import type { StepInput } from '../db/execution-events.repository.js';
import type { Stored } from '../domain/list-types.js';
import type { Mailer } from '../ports.js';
import type { WebhookOutbox } from './webhook-outbox.service.js';

/** The step that made an execution fail, as a notification tells it. */
export interface FailingStep {
  readonly role: string;
  readonly name: string;
  readonly result: string;
  readonly server_id: string | null;
  readonly server_name: string | null;
  /** The server's address (IP, else FQDN). */
  readonly host: string | null;
  /** The error in a line or a few: the module's `msg`, else its `reason` or `stderr`. */
  readonly error: string;
}

/** The body of a webhook request (and what an e-mail says). */
export interface ExecutionNotice {
  readonly event: `execution.${NotificationEvent}`;
  readonly time: number;
  readonly execution: {
    readonly id: string;
    readonly state: NotificationEvent;
    readonly reason: string | null;
    readonly playbook: string;
    readonly playbook_configuration: { readonly id: string; readonly version: number };
    readonly cluster: { readonly id: string; readonly name: string | null };
    readonly initiator_id: string | null;
    readonly runner_id: string | null;
    readonly time_created: number;
    readonly time_started: number | null;
    readonly time_finished: number | null;
    readonly url: string;
    readonly log_url: string;
  };
  readonly failing_step: FailingStep | null;
}

/** The body of a webhook request of a cluster's change of health (and what its e-mail says). */
export interface ClusterHealthNotice {
  readonly event: 'cluster.health_changed';
  readonly time: number;
  readonly cluster: { readonly id: string; readonly name: string | null; readonly status_url: string };
  /** The health before (null: never collected) and now: `HEALTH_OK`, `HEALTH_WARN`, `HEALTH_ERR` or `UNREACHABLE`. */
  readonly health: { readonly previous: string | null; readonly current: string };
  readonly checks: readonly { readonly code: string; readonly severity: string; readonly summary: string; readonly muted: boolean; readonly playbook: string | null }[];
  readonly unreachable: { readonly reason: string; readonly since: number } | null;
}

/** What the notifier reads of the rest of the system (in the caller's transaction: it runs inside one). */
export interface NotifierSources {
  cluster(id: string): Promise<Stored<ClusterData> | undefined>;
  server(id: string): Promise<Stored<ServerData> | undefined>;
  lastFailedStep(executionId: string): Promise<StepInput | null>;
  /** Who started the execution (version 1's initiator). */
  initiatorOf(executionId: string): Promise<string | null>;
  /** Runs `fn` in a (nested) transaction: a savepoint of the caller's, rolled back alone when `fn` throws. */
  atomically<T>(fn: () => Promise<T>): Promise<T>;
}

interface Targets {
  readonly emails: string[];
  readonly webhooks: string[];
}

const MAX_ERROR_CHARS = 1000;

/** The secret of the configured webhook with this URL (global or a cluster's), if one is configured. */
export function configuredSecret(config: Config, url: string): string | null {
  const n = config.notifications;
  for (const t of [{ webhooks: n.webhooks }, ...Object.values(n.clusters)]) {
    for (const w of t.webhooks ?? []) if (w.url === url) return w.secret;
  }
  return null;
}

/** The error of a failed step in a few words: the module's `msg`, `reason` or last `stderr` line, else the object. */
export function stepError(error: Record<string, unknown>): string {
  for (const key of ['msg', 'reason', 'stderr', 'message']) {
    const v = error[key];
    if (typeof v === 'string' && v.trim()) {
      const text = key === 'stderr' ? (v.trim().split('\n').pop() ?? v) : v.trim();
      return text.slice(0, MAX_ERROR_CHARS);
    }
  }
  return JSON.stringify(error).slice(0, MAX_ERROR_CHARS);
}

/**
 * Notifications of an execution's end (completed, failed, canceled): an e-mail to each
 * configured address and a signed webhook to each configured URL that asked for the event,
 * global targets and those of the execution's cluster (`notifications.clusters`, keyed by
 * the cluster's id or its name). `executionEnded` runs inside the transaction that stores the
 * final state, so the notifications are committed with it (the mail and webhook outboxes),
 * and are never sent for a change that was rolled back.
 */
export class ExecutionNotifier implements StatusNotifier {
  private readonly base: string;

  constructor(
    private readonly config: Config,
    private readonly sources: NotifierSources,
    private readonly mailer: Mailer,
    private readonly webhooks: WebhookOutbox,
    private readonly log: Logger,
  ) {
    this.base = publicBaseUrl(config);
  }

  /**
   * Queues the notifications of an execution that just ended; the caller holds the
   * transaction and awaits this within it. Never rejects: a failure is logged.
   */
  async executionEnded(execution: Stored<ExecutionData>): Promise<void> {
    // A preview changed nothing: its end, failed or not, is an answer, not news.
    if (execution.data.preview === true) return;
    if (!this.anyTargets(execution.data.state)) return;
    try {
      // a savepoint: a notification that cannot be queued is logged, and never undoes the end
      await this.sources.atomically(() => this.queue(execution));
    } catch (err) {
      this.log.error({ err, executionId: execution.id }, 'cannot queue the notifications of an execution');
    }
  }

  private async queue(execution: Stored<ExecutionData>): Promise<void> {
    const state = execution.data.state;
    if (!(NOTIFICATION_EVENTS as readonly string[]).includes(state)) return;
    const event = state as NotificationEvent;
    const cluster = await this.sources.cluster(execution.data.cluster_id);
    const targets = this.targets(event, execution.data.cluster_id, cluster?.data.name ?? null);
    if (targets.emails.length === 0 && targets.webhooks.length === 0) return;
    const notice = await this.notice(execution, event, cluster);
    const body = JSON.stringify(notice);
    for (const url of targets.webhooks) await this.webhooks.enqueue({ executionId: execution.id, event: notice.event, url, body });
    const mail = this.mail(notice);
    for (const to of targets.emails) await this.mailer.send({ to, ...mail });
    this.log.info({ executionId: execution.id, event: notice.event, emails: targets.emails.length, webhooks: targets.webhooks.length }, 'execution end notified');
  }

  /**
   * Queues the notifications of a change of a cluster's health (event `cluster_health`), in
   * the caller's transaction (the one that records the change: once per change). Never
   * rejects: a failure is logged.
   */
  async clusterHealthChanged(change: HealthChange): Promise<void> {
    const targets = this.targets('cluster_health', change.clusterId, change.clusterName);
    if (targets.emails.length === 0 && targets.webhooks.length === 0) return;
    const notice: ClusterHealthNotice = {
      event: 'cluster.health_changed',
      time: change.time,
      cluster: { id: change.clusterId, name: change.clusterName, status_url: `${this.base}/v1/cluster/${change.clusterId}/status/` },
      health: { previous: change.previous, current: change.current },
      checks: change.checks.map((c) => ({ code: c.code, severity: c.severity, summary: c.summary, muted: c.muted, playbook: c.playbook })),
      unreachable: change.unreachable,
    };
    try {
      await this.sources.atomically(async () => {
        const body = JSON.stringify(notice);
        // The deliveries of a cluster's notices are kept under the cluster's id.
        for (const url of targets.webhooks) await this.webhooks.enqueue({ executionId: change.clusterId, event: notice.event, url, body });
        const mail = this.healthMail(notice);
        for (const to of targets.emails) await this.mailer.send({ to, ...mail });
      });
      this.log.info({ clusterId: change.clusterId, health: notice.health, emails: targets.emails.length, webhooks: targets.webhooks.length }, 'cluster health change notified');
    } catch (err) {
      this.log.error({ err, clusterId: change.clusterId }, 'cannot queue the notifications of a cluster health change');
    }
  }

  private healthMail(n: ClusterHealthNotice): { subject: string; text: string } {
    const cluster = n.cluster.name ?? n.cluster.id;
    const lines = [
      `The health of the cluster ${cluster} changed: ${n.health.current}${n.health.previous ? ` (was ${n.health.previous})` : ''}.`,
      '',
      `Cluster:        ${cluster} (${n.cluster.id})`,
      `Time:           ${new Date(n.time * 1000).toISOString()}`,
    ];
    if (n.unreachable) {
      lines.push(`Unreachable:    since ${new Date(n.unreachable.since * 1000).toISOString()}`, `Reason:         ${n.unreachable.reason}`);
    }
    if (n.checks.length > 0) {
      lines.push('', 'Checks:');
      for (const c of n.checks) lines.push(`  ${c.severity} ${c.code}: ${c.summary}${c.muted ? ' (muted)' : ''}${c.playbook ? ` [playbook ${c.playbook}]` : ''}`);
    }
    lines.push('', `Status:         ${n.cluster.status_url}`);
    return { subject: `Carapace: cluster ${cluster} is ${n.health.current}${n.health.previous ? ` (was ${n.health.previous})` : ''}`, text: `${lines.join('\n')}\n` };
  }

  /** Whether any target might ask for this end (none configured: nothing to read or queue). */
  private anyTargets(state: string): boolean {
    if (!(NOTIFICATION_EVENTS as readonly string[]).includes(state)) return false;
    if (Object.keys(this.config.notifications.clusters).length > 0) return true;
    const global = this.targets(state as NotificationEvent, '', null);
    return global.emails.length > 0 || global.webhooks.length > 0;
  }

  /** The global targets and the cluster's that ask for `event`, each address and URL once. */
  private targets(event: NotificationEvent | ClusterEvent, clusterId: string, clusterName: string | null): Targets {
    const n = this.config.notifications;
    const sets: NotificationTargets[] = [{ email: n.email, webhooks: n.webhooks }];
    for (const [key, t] of Object.entries(n.clusters)) {
      if (key === clusterId || (clusterName !== null && key === clusterName)) sets.push(t);
    }
    const emails = new Map<string, string>();
    const webhooks = new Set<string>();
    for (const t of sets) {
      for (const e of t.email ?? []) {
        const { to, events } = typeof e === 'string' ? { to: e, events: undefined } : e;
        if (!events || events.includes(event)) emails.set(to.toLowerCase(), emails.get(to.toLowerCase()) ?? to);
      }
      for (const w of t.webhooks ?? []) if (!w.events || w.events.includes(event)) webhooks.add(w.url);
    }
    return { emails: [...emails.values()], webhooks: [...webhooks] };
  }

  private async notice(execution: Stored<ExecutionData>, event: NotificationEvent, cluster: Stored<ClusterData> | undefined): Promise<ExecutionNotice> {
    const d = execution.data;
    const initiatorId = await this.sources.initiatorOf(execution.id);
    const failingStep = event === 'failed' ? await this.failingStep(execution.id) : null;
    const url = `${this.base}/v1/execution/${execution.id}/`;
    return {
      event: `execution.${event}`,
      time: execution.time_updated,
      execution: {
        id: execution.id,
        state: event,
        reason: d.reason,
        playbook: d.playbook_configuration.playbook_name,
        playbook_configuration: { id: d.playbook_configuration.id, version: d.playbook_configuration.version },
        cluster: { id: d.cluster_id, name: cluster?.data.name ?? null },
        initiator_id: initiatorId,
        runner_id: d.runner_id,
        time_created: d.time_created,
        time_started: d.time_started,
        time_finished: d.time_finished,
        url,
        log_url: `${url}log/`,
      },
      failing_step: failingStep,
    };
  }

  private async failingStep(executionId: string): Promise<FailingStep | null> {
    const step = await this.sources.lastFailedStep(executionId);
    if (!step) return null;
    const server = step.serverId ? await this.sources.server(step.serverId) : undefined;
    return {
      role: step.role,
      name: step.name,
      result: step.result,
      server_id: step.serverId,
      server_name: server?.data.name ?? null,
      host: server ? server.data.ip || server.data.fqdn || null : null,
      error: stepError(step.error),
    };
  }

  private mail(n: ExecutionNotice): { subject: string; text: string } {
    const e = n.execution;
    const cluster = e.cluster.name ?? e.cluster.id;
    const time = (s: number | null) => (s === null ? '-' : new Date(s * 1000).toISOString());
    const lines = [
      `The execution ${e.id} of the playbook ${e.playbook} on the cluster ${cluster} ended: ${e.state}.`,
      '',
      `Playbook:       ${e.playbook} (configuration ${e.playbook_configuration.id}, version ${e.playbook_configuration.version})`,
      `Cluster:        ${cluster} (${e.cluster.id})`,
      `Started:        ${time(e.time_started)}`,
      `Finished:       ${time(e.time_finished)}`,
      ...(e.runner_id ? [`Runner:         ${e.runner_id}`] : []),
      ...(e.reason ? [`Reason:         ${e.reason}`] : []),
    ];
    const s = n.failing_step;
    if (s) {
      const where = s.server_name ? `${s.server_name}${s.host && s.host !== s.server_name ? ` (${s.host})` : ''}` : (s.server_id ?? 'no host');
      lines.push(`Failing step:   ${s.role ? `${s.role}: ` : ''}${s.name}, on ${where}`, `Error:          ${s.error}`);
    }
    lines.push('', `Log:            ${e.log_url}`, `Execution:      ${e.url}`);
    return { subject: `Carapace: execution ${e.state}: ${e.playbook} on ${cluster}`, text: `${lines.join('\n')}\n` };
  }
}
