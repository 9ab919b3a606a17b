import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { BlockList } from 'node:net';
import type { Logger } from 'pino';
import type { ServerData, ServerFacts } from '@carapace/models';
import type { Stored } from '../domain/list-types.js';
import type { Clock } from '../ports.js';
import type { ServerService } from './server.service.js';
import { Signal } from './signal.js';

/** A request for a runner to gather a server's facts over SSH. */
export interface FactsRequest {
  readonly requestId: string;
  readonly serverId: string;
  /** The server's IP, or its FQDN when it has no IP. */
  readonly address: string;
  readonly username: string;
  /** The host key on record, which the server must present; null when none is recorded. */
  readonly expectedHostKey: string | null;
}

/** A runner's answer to a `FactsRequest`, decoded and checked where it arrived. */
export type FactsAnswer = { readonly requestId: string; readonly serverId: string } & (
  | { readonly ok: true; readonly facts: ServerFacts; readonly hostKey: string | null }
  | { readonly ok: false; readonly error: string }
);

interface Pending {
  serverId: string;
  attempts: number;
  dueMs: number;
  inFlight: { requestId: string; runner: string; sentMs: number } | null;
}

/** Retry delays after failed attempts: 5 s doubling up to 5 min, with ±20 % jitter. */
export function retryDelayMs(attempts: number, random: () => number = Math.random): number {
  const base = Math.min(300_000, 5_000 * 2 ** Math.max(0, attempts - 1));
  return Math.round(base * (0.8 + 0.4 * random()));
}

/**
 * Which runner may gather a server's facts: a runner whose labels have `networks` (comma-
 * separated CIDRs, e.g. `10.0.0.0/8,192.168.1.0/24`) serves only servers with an address in
 * them; a runner without it serves every server.
 */
export function runnerServes(labels: Readonly<Record<string, string>>, address: string): boolean {
  const networks = labels.networks?.trim();
  if (!networks) return true;
  const family = isIP(address);
  if (!family) return true; // a name: the runner resolves it
  const list = new BlockList();
  for (const cidr of networks.split(',')) {
    const [net, bits] = cidr.trim().split('/');
    const netFamily = net ? isIP(net) : 0;
    if (!net || !netFamily) continue;
    const prefix = Number(bits ?? (netFamily === 4 ? 32 : 128));
    if (!Number.isInteger(prefix)) continue;
    list.addSubnet(net, prefix, netFamily === 4 ? 'ipv4' : 'ipv6');
  }
  return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Fact gathering for servers that registered (issue 6): one request per server at a time,
 * handed to a connected runner that serves its network, retried with capped exponential
 * backoff while the host is unreachable, and again when a runner does not answer in time.
 */
export class FactsScheduler {
  /** Emitted when requests are waiting for a runner. */
  readonly requested = new Signal<void>();
  private readonly pending = new Map<string, Pending>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly servers: ServerService,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly answerTimeoutMs = 120_000,
  ) {
    this.unsubscribe = servers.factsRequested.on((id) => this.request(id));
  }

  /** Queues the servers left waiting for facts by a previous run of the control plane. */
  async resume(): Promise<void> {
    const waiting = await this.servers.list({ page: 1, perPage: 1, all: true, filter: JSON.stringify({ state: { in: ['gathering_facts', 'unreachable'] } }) });
    for (const server of waiting.items) this.request(server.id);
  }

  /** Asks for a server's facts (again). */
  request(serverId: string): void {
    this.pending.set(serverId, { serverId, attempts: 0, dueMs: this.clock.nowMs(), inFlight: null });
    this.requested.emit();
  }

  /** Number of servers waiting for facts. */
  get size(): number {
    return this.pending.size;
  }

  /** Hands due requests to the given runners, round-robin among those serving each server. */
  async take(runners: readonly { name: string; labels: Readonly<Record<string, string>> }[]): Promise<{ runner: string; request: FactsRequest }[]> {
    const nowMs = this.clock.nowMs();
    const out: { runner: string; request: FactsRequest }[] = [];
    let turn = 0;
    for (const p of this.pending.values()) {
      if (p.inFlight && nowMs - p.inFlight.sentMs < this.answerTimeoutMs) continue;
      if (p.inFlight) {
        this.log.warn({ serverId: p.serverId, runner: p.inFlight.runner }, 'no facts answer in time; asking again');
        p.inFlight = null;
      }
      if (p.dueMs > nowMs) continue;
      let server: Stored<ServerData>;
      try {
        server = await this.servers.get(p.serverId);
      } catch {
        this.pending.delete(p.serverId);
        continue;
      }
      if (server.time_deleted !== 0) {
        this.pending.delete(p.serverId);
        continue;
      }
      const address = server.data.ip || server.data.fqdn;
      const eligible = runners.filter((r) => runnerServes(r.labels, address));
      const runner = eligible[turn++ % Math.max(1, eligible.length)];
      if (!runner) continue;
      const requestId = randomUUID();
      p.inFlight = { requestId, runner: runner.name, sentMs: nowMs };
      out.push({
        runner: runner.name,
        request: { requestId, serverId: server.id, address, username: server.data.username, expectedHostKey: server.data.ssh_host_key ?? null },
      });
    }
    return out;
  }

  /** Records a runner's answer; a failure is retried later. */
  async complete(runner: string, answer: FactsAnswer): Promise<void> {
    const serverId = answer.serverId;
    const p = this.pending.get(serverId);
    if (!p?.inFlight || p.inFlight.requestId !== answer.requestId) {
      this.log.info({ runner, serverId }, 'ignored a facts answer nobody waits for');
      return;
    }
    p.inFlight = null;
    if (answer.ok) {
      await this.servers.recordFacts(serverId, answer.facts, answer.hostKey);
      this.pending.delete(serverId);
      this.log.info({ runner, serverId }, 'facts recorded');
      return;
    }
    const error = answer.error;
    p.attempts += 1;
    p.dueMs = this.clock.nowMs() + retryDelayMs(p.attempts);
    try {
      await this.servers.recordFactsFailure(serverId, error);
    } catch {
      this.pending.delete(serverId);
    }
    this.log.warn({ runner, serverId, attempts: p.attempts, error }, 'facts not gathered; will retry');
  }

  /** Wakes the dispatcher when a retry comes due; returns its stop. */
  start(): () => void {
    const timer = setInterval(() => {
      const nowMs = this.clock.nowMs();
      for (const p of this.pending.values()) {
        if ((!p.inFlight && p.dueMs <= nowMs) || (p.inFlight && nowMs - p.inFlight.sentMs >= this.answerTimeoutMs)) {
          this.requested.emit();
          return;
        }
      }
    }, 1000);
    timer.unref();
    return () => clearInterval(timer);
  }

  close(): void {
    this.unsubscribe();
  }
}
