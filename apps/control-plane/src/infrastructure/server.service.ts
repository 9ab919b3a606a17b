import { isIP } from 'node:net';
import { hostProblem, isHost, ServerDataSchema, ServerFactsSchema, type ServerCreate, type ServerData, type ServerFacts, type ServerUpdate } from '@carapace/models';
import { Value } from 'typebox/value';
import type { Bus } from '../db/bus.js';
import type { FactsRequestRepository } from '../db/facts-request.repository.js';
import type { LockRepository } from '../db/lock.repository.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import type { ListItem, ListRequest, Page, Stored, StoredText } from '../domain/list-types.js';
import { badRequest, conflict } from '../errors.js';
import type { Clock } from '../ports.js';
import type { Principal } from '../accounts/principal.js';
import { Signal } from '../services/signal.js';
import { VersionedService } from '../services/versioned.service.js';

/** Who registers a server: a user, or a host with the discovery token (no user). */
export type Registrar = Principal | null;

/**
 * Facts as the API serves them: only what `ServerFactsSchema` defines, at every level (a
 * runner may send more; it is not kept).
 */
export function cleanFacts(facts: ServerFacts): ServerFacts {
  return Value.Clean(ServerFactsSchema, Value.Clone(facts)) as ServerFacts;
}

/**
 * Whether stored server data (`value`, parsed from `text`) is exactly what the API serves:
 * it has the types of `ServerDataSchema` (nothing for the serializer to coerce) and nothing
 * the schema does not define (nothing for it to drop, including facts that match neither
 * full facts nor `{}`), so the stored text and the serializer's output are the same JSON.
 */
export function servedAsStored(value: unknown, text: string): boolean {
  return Value.Check(ServerDataSchema, value) && JSON.stringify(Value.Clean(ServerDataSchema, Value.Clone(value))) === text;
}

/** How many rows proven exact a `ServerService` remembers before it starts over. */
const EXACT_ROWS_MAX = 500_000;

/**
 * Servers: registration (idempotent per id), renaming, facts recorded by runners, and the
 * guard against deleting a server that is in a cluster or locked.
 */
export class ServerService extends VersionedService<ServerData> {
  /**
   * Emitted with the id of each server that needs its facts gathered (new or re-registered),
   * whichever replica it registered through (the bus's `facts`), once its request is stored
   * (`facts_requests`, which `FactsScheduler` hands out).
   */
  readonly factsRequested = new Signal<string>();
  /** The rows (by key) whose data JSON was proven exactly what the API serves. */
  private readonly exactRows = new Set<number>();

  constructor(
    repo: VersionedRepository<ServerData>,
    clock: Clock,
    private readonly locks: LockRepository,
    private readonly bus: Bus,
    private readonly factsRequests: FactsRequestRepository,
  ) {
    super('server', repo, clock);
    bus.subscribe('facts', (id) => this.factsRequested.emit(id));
  }

  /**
   * Registers a host. A new id creates the server; a known id refreshes host and username
   * (reviving it if it was deleted) and asks for its facts again: the request (a row of
   * `facts_requests`, started over) is stored with the server, in one transaction.
   */
  async register(body: ServerCreate, registrar: Registrar): Promise<Stored<ServerData>> {
    const id = (body.id ?? body.server_id)?.toLowerCase();
    if (!id) throw badRequest('The body needs the server id: "id" (or "server_id").');
    if (body.id && body.server_id && body.id.toLowerCase() !== body.server_id.toLowerCase()) {
      throw badRequest('"id" and "server_id" differ.');
    }
    const problem = hostProblem(body.host);
    if (problem !== null) {
      throw badRequest(`"host" must be an IPv4 address, an IPv6 address or a DNS name: ${JSON.stringify(body.host.slice(0, 64))} is not (${problem}).`);
    }
    const initiator = registrar?.user.id ?? null;
    const now = this.now();
    const server = await this.repo.transaction(async () => {
      const latest = await this.repo.getForUpdate(id);
      await this.factsRequests.request(id, this.clock.nowMs());
      if (!latest) {
        return this.repo.create(
          {
            name: body.host,
            fqdn: body.host,
            ip: isIP(body.host) ? body.host : '',
            username: body.username,
            state: 'gathering_facts',
            cluster_id: null,
            facts: {},
            facts_error: null,
            ssh_host_key: null,
          },
          initiator,
          now,
          id,
        );
      }
      const data: ServerData = {
        ...latest.data,
        username: body.username,
        ip: isIP(body.host) ? body.host : latest.data.ip,
        fqdn: isIP(body.host) ? latest.data.fqdn : body.host,
        state: latest.data.cluster_id ? latest.data.state : 'gathering_facts',
        facts_error: null,
      };
      return this.repo.append(latest, { data, time_deleted: 0 }, initiator, now);
    });
    await this.bus.publish('facts', server.id);
    return server;
  }

  async update(id: string, body: ServerUpdate, principal: Principal): Promise<Stored<ServerData>> {
    await this.checkUpdatable(id, body);
    return this.appendChecked(id, body, (latest) => ({ data: { ...latest.data, name: body.data.name } }), principal);
  }

  delete(id: string, principal: Principal): Promise<Stored<ServerData>> {
    return this.appendChecked(
      id,
      null,
      async (latest) => {
        if (latest.data.cluster_id) throw conflict('CannotDeleteServer', `The server ${id} is in the cluster ${latest.data.cluster_id}.`);
        if (await this.locks.lockOf(id, this.clock.nowMs())) throw conflict('CannotDeleteServer', `The server ${id} is locked by a running execution.`);
        return { time_deleted: this.now() };
      },
      principal,
    );
  }

  /**
   * A page of the server list for `GET /v1/server/`: the rows with their data JSON as
   * stored, where it is exactly what the API would serve, so that the list is written
   * without parsing and serializing about 10 KB of facts per server.
   *
   * A row is checked once (parsed, `servedAsStored`), then remembered by its key: a row's
   * data is never rewritten. Facts are cleaned when recorded, so every row stored since is
   * exact; a row that is not (stored before, with fields the schema does not define) is
   * handed out parsed, to go through the response schema as before.
   */
  async listForResponse(request: ListRequest): Promise<Page<ListItem<ServerData>>> {
    const page = await this.repo.listText(request);
    return { items: page.items.map((row) => this.listItem(row)), total: page.total };
  }

  protected override listItem(row: StoredText): ListItem<ServerData> {
    if (this.exactRows.has(row.pk)) return { row };
    const text = row.data.toString('utf8');
    const data = JSON.parse(text) as unknown;
    if (servedAsStored(data, text)) {
      if (this.exactRows.size >= EXACT_ROWS_MAX) this.exactRows.clear();
      this.exactRows.add(row.pk);
      return { row };
    }
    const { id, version, time_updated, time_deleted, initiator_id } = row;
    return { model: { id, version, time_updated, time_deleted, initiator_id, data: data as ServerData } };
  }

  /**
   * Records the facts a runner gathered: name, FQDN and address from them, the SSH host key
   * (kept from the first time), and the server becomes operational. The facts are stored
   * cleaned (`cleanFacts`): what is stored is what the API serves. A FQDN or an address
   * that is not a host (`isHost`: the server itself reports them) is not taken.
   */
  recordFacts(id: string, gathered: ServerFacts, sshHostKey: string | null): Promise<Stored<ServerData>> {
    const facts = cleanFacts(gathered);
    const now = this.now();
    return this.repo.transaction(async () => {
      const latest = await this.getForUpdate(id);
      const data: ServerData = {
        ...latest.data,
        name: latest.version === 1 || latest.data.name === latest.data.fqdn ? facts.hostname || latest.data.name : latest.data.name,
        fqdn: isHost(facts.fqdn) ? facts.fqdn : latest.data.fqdn,
        ip: facts.default_ipv4 !== null && isIP(facts.default_ipv4) === 4 ? facts.default_ipv4 : latest.data.ip,
        facts,
        facts_error: null,
        ssh_host_key: latest.data.ssh_host_key ?? sshHostKey,
        state: latest.data.state === 'gathering_facts' || latest.data.state === 'unreachable' ? 'operational' : latest.data.state,
      };
      return this.repo.append(latest, { data }, null, now);
    });
  }

  /** Records that facts could not be gathered, and why. */
  recordFactsFailure(id: string, reason: string): Promise<Stored<ServerData>> {
    const now = this.now();
    return this.repo.transaction(async () => {
      const latest = await this.getForUpdate(id);
      const state = latest.data.state === 'gathering_facts' ? 'unreachable' : latest.data.state;
      return this.repo.append(latest, { data: { ...latest.data, state, facts_error: reason } }, null, now);
    });
  }

  /** Live servers by id, in the given order; the ids that are unknown or deleted. */
  async liveMany(ids: readonly string[]): Promise<{ found: Stored<ServerData>[]; missing: string[] }> {
    const found: Stored<ServerData>[] = [];
    const missing: string[] = [];
    const byId = await this.repo.getMany(ids);
    for (const id of ids) {
      const model = byId.get(id);
      const s = model && model.time_deleted === 0 ? model : undefined;
      if (s) found.push(s);
      else missing.push(id);
    }
    return { found, missing };
  }

  /** The live servers whose facts are awaited: being gathered, or unreachable at the last try. */
  waitingForFacts(): Promise<Stored<ServerData>[]> {
    return this.repo.liveWhere({ state: ['gathering_facts', 'unreachable'] });
  }

  /** The live servers of a cluster. */
  async ofCluster(clusterId: string): Promise<Stored<ServerData>[]> {
    return this.repo.liveWhere({ cluster_id: clusterId });
  }

  /** How many live servers a cluster has. */
  countInCluster(clusterId: string): Promise<number> {
    return this.repo.countLive('cluster_id', clusterId);
  }

  /** Sets a server's state (a run's effect: maintenance); no new version when it is already so. The caller holds the transaction. */
  async setState(id: string, state: string, now: number): Promise<Stored<ServerData>> {
    const latest = await this.getForUpdate(id);
    if (latest.data.state === state) return latest;
    return this.repo.append(latest, { data: { ...latest.data, state } }, null, now);
  }

  /** Sets the cluster of servers (a playbook's effect); the caller holds the transaction. */
  async setCluster(id: string, clusterId: string | null, now: number): Promise<Stored<ServerData>> {
    const latest = await this.getForUpdate(id);
    return this.repo.append(latest, { data: { ...latest.data, cluster_id: clusterId } }, null, now);
  }
}
