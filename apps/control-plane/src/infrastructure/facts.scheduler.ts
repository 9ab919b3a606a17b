import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { BlockList } from 'node:net';
import type { Logger } from 'pino';
import type { ServerFacts } from '@carapace/models';
import type { FactsRequestRepository } from '../db/facts-request.repository.js';
import type { Clock } from '../ports.js';
import type { ServerService } from './server.service.js';
import { Signal } from '../services/signal.js';

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

/** How many due requests `take` reads and locks at a time. */
const TAKE_PAGE = 200;

/** Thrown to roll back the recording of an answer whose request changed meanwhile. */
const STALE = new Error('the facts request changed');

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
 *
 * The requests are rows of `facts_requests` (`FactsRequestRepository`), shared by the
 * replicas, not this process's memory: a registration writes its server's row in its own
 * transaction; the bus's `facts` message (and a look at the table every second, `start`)
 * only wakes each replica to offer the due rows to its own runners, and the row is claimed by
 * one replica only (`FOR UPDATE SKIP LOCKED` on PostgreSQL), which gives it a new request id
 * and the answer's deadline (`answerTimeoutMs`, 120 s). So one runner, on any replica,
 * gathers a server at a time; the answer is recorded by whichever replica receives it, if
 * it carries the request id (and comes from the runner) the row holds; and a request whose
 * replica or runner died is handed out again by any replica once its deadline passed.
 */
export class FactsScheduler {
  /** Emitted when requests may be waiting for a runner (this replica's or another's). */
  readonly requested = new Signal<void>();
  private readonly unsubscribe: () => void;
  /**
   * Whether `take` should look at the table: set whenever `requested` is emitted (a request,
   * a wake-up from another replica, the look every second), so that the dispatches of
   * executions cost no query here; and from `lookAtMs` on, when a retry or an answer's
   * deadline this replica set comes due.
   */
  private look = true;
  private lookAtMs = Infinity;

  constructor(
    private readonly servers: ServerService,
    private readonly requests: FactsRequestRepository,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly answerTimeoutMs = 120_000,
  ) {
    // A server asked for its facts, through any replica: its row is written; look.
    const offs = [servers.factsRequested.on(() => this.requested.emit()), this.requested.on(() => (this.look = true))];
    this.unsubscribe = () => {
      for (const off of offs) off();
    };
  }

  /**
   * Asks for the facts of the servers left waiting without a request (stored before requests
   * were kept in the database); a request already stored is left as it is (another replica
   * may be waiting for its answer).
   */
  async resume(): Promise<void> {
    const waiting = await this.servers.waitingForFacts();
    const nowMs = this.clock.nowMs();
    for (const server of waiting) await this.requests.requestIfAbsent(server.id, nowMs);
    if (waiting.length > 0) this.requested.emit();
  }

  /**
   * Asks for a server's facts (again), starting over: the answer of a runner asked before is
   * no longer awaited. A registration does this in its own transaction
   * (`ServerService.register`), and tells every replica.
   */
  async request(serverId: string): Promise<void> {
    await this.requests.request(serverId, this.clock.nowMs());
    this.requested.emit();
  }

  /** Servers waiting for their facts in the whole installation (read at each metrics scrape). */
  count(): Promise<number> {
    return this.requests.count();
  }

  /**
   * Hands due requests to the given runners (those of this replica), round-robin among
   * those serving each server; a request no given runner serves stays for another replica's.
   * What is returned is claimed in the database: it must be sent.
   */
  async take(runners: readonly { name: string; labels: Readonly<Record<string, string>> }[]): Promise<{ runner: string; request: FactsRequest }[]> {
    const nowMs = this.clock.nowMs();
    if (runners.length === 0 || (!this.look && nowMs < this.lookAtMs)) return [];
    this.look = false;
    this.lookAtMs = Infinity;
    if (!(await this.requests.anyDue(nowMs))) return [];
    return this.requests.transaction(async () => {
      const out: { runner: string; request: FactsRequest }[] = [];
      let turn = 0;
      let after: { dueMs: number; serverId: string } | undefined;
      for (;;) {
        const page = await this.requests.due(nowMs, TAKE_PAGE, after);
        const last = page.at(-1);
        if (!last) break;
        after = { dueMs: last.dueMs, serverId: last.serverId };
        const { found } = await this.servers.liveMany(page.map((r) => r.serverId));
        const live = new Map(found.map((s) => [s.id, s]));
        for (const row of page) {
          const server = live.get(row.serverId);
          if (!server) {
            await this.requests.remove(row.serverId);
            continue;
          }
          const address = server.data.ip || server.data.fqdn;
          const eligible = runners.filter((r) => runnerServes(r.labels, address));
          const runner = eligible[turn++ % Math.max(1, eligible.length)];
          if (!runner) {
            this.look = true; // due still: the next runners may serve it
            continue;
          }
          if (row.runner !== null) this.log.warn({ serverId: row.serverId, runner: row.runner }, 'no facts answer in time; asking again');
          const requestId = randomUUID();
          await this.requests.claim(row.serverId, requestId, runner.name, nowMs, nowMs + this.answerTimeoutMs);
          this.lookAtMs = Math.min(this.lookAtMs, nowMs + this.answerTimeoutMs);
          out.push({
            runner: runner.name,
            request: { requestId, serverId: server.id, address, username: server.data.username, expectedHostKey: server.data.ssh_host_key ?? null },
          });
        }
        if (page.length < TAKE_PAGE) break;
      }
      return out;
    });
  }

  /**
   * Records a runner's answer, whichever replica handed the request out: only the answer to
   * the request the database holds, from the runner it was handed to; a failure is retried
   * later.
   */
  async complete(runner: string, answer: FactsAnswer): Promise<void> {
    const serverId = answer.serverId;
    const row = await this.requests.get(serverId);
    if (!row || row.requestId !== answer.requestId || row.runner !== runner) {
      this.log.info({ runner, serverId }, 'ignored a facts answer nobody waits for');
      return;
    }
    if (answer.ok) {
      let recorded: boolean;
      try {
        // The server first, then the request, in the order of a registration's locks.
        recorded = await this.requests.transaction(async () => {
          await this.servers.recordFacts(serverId, answer.facts, answer.hostKey);
          if (!(await this.requests.remove(serverId, answer.requestId))) throw STALE;
          return true;
        });
      } catch (err) {
        if (err !== STALE) {
          // Handed out again at once: `take` drops it if the server is gone.
          await this.requests.retryLater(serverId, answer.requestId, row.attempts, this.clock.nowMs()).catch(() => false);
          throw err;
        }
        recorded = false;
      }
      if (!recorded) this.log.info({ runner, serverId }, 'ignored a facts answer nobody waits for any more');
      else this.log.info({ runner, serverId }, 'facts recorded');
      return;
    }
    const error = answer.error;
    const attempts = row.attempts + 1;
    const retryAtMs = this.clock.nowMs() + retryDelayMs(attempts);
    this.lookAtMs = Math.min(this.lookAtMs, retryAtMs);
    if (!(await this.requests.retryLater(serverId, answer.requestId, attempts, retryAtMs))) {
      this.log.info({ runner, serverId }, 'ignored a facts answer nobody waits for any more');
      return;
    }
    try {
      await this.servers.recordFactsFailure(serverId, error);
    } catch {
      await this.requests.remove(serverId);
    }
    this.log.warn({ runner, serverId, attempts, error }, 'facts not gathered; will retry');
  }

  /**
   * Looks at the requests every second: wakes the dispatcher when one is due (a retry, an
   * answer past its deadline, a request another replica could not serve). Returns its stop.
   */
  start(): () => void {
    let looking = false;
    const timer = setInterval(() => {
      if (looking) return;
      looking = true;
      const nowMs = this.clock.nowMs();
      this.requests
        .anyDue(nowMs)
        .then((due) => {
          if (due) this.requested.emit();
        })
        .catch((err: unknown) => this.log.warn({ err }, 'could not look at the facts requests'))
        .finally(() => (looking = false));
    }, 1000);
    timer.unref();
    return () => clearInterval(timer);
  }

  close(): void {
    this.unsubscribe();
  }
}
