import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Runner, RunnerToken } from '@carapace/models';
import { conflict, notFound } from '../errors.js';
import type { Bus } from '../db/bus.js';
import type { RunnerRepository } from '../db/runner.repository.js';
import type { RunnerSessionRepository } from '../db/runner-session.repository.js';
import type { Clock } from '../ports.js';
import { nowS } from '../ports.js';
import { Batcher, HEARTBEAT_BATCHING } from '../batcher.js';
import { Signal } from '../services/signal.js';

/** Names runners may have: what fits a hostname label, dots and underscores allowed. */
export const RUNNER_NAME = /^[a-z0-9][a-z0-9_.-]{0,62}$/;

const TOKEN_PREFIX = 'crt';

/** What a connected runner told about itself, and how it is doing. */
export interface RunnerSession {
  readonly sessionId: string;
  readonly name: string;
  readonly version: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly slots: number;
  readonly connectedAtMs: number;
  readonly peer: string;
  readonly sshPublicKey: string;
  lastHeartbeatMs: number;
  draining: boolean;
}

/** What a runner says about itself when it connects. */
export interface RunnerHello {
  readonly name: string;
  readonly version: string;
  /** Added to (and overriding) the labels the runner was registered with. */
  readonly labels: Readonly<Record<string, string>>;
  readonly slots: number;
  readonly peer: string;
  readonly sshPublicKey: string;
}

function digest(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/**
 * Runner identities and sessions. A runner token is `crt.<name in base64url>.<secret>`; only
 * the SHA-256 of the secret is stored, compared in constant time. One session per runner
 * name: a new stream of the same runner replaces the old one.
 *
 * The sessions of the streams this replica holds are kept in memory (dispatch reads them on
 * every turn) and in `runner_sessions` (`RunnerSessionRepository`), so that every replica
 * lists every connected runner; a session whose heartbeat is older than the lease timeout
 * counts as gone (its replica died with the stream).
 */
export class RunnerService {
  private readonly sessions = new Map<string, RunnerSession>();
  /** Heartbeats waiting to be stored together (`heartbeat`), at the time of their group. */
  private readonly heartbeats = new Batcher<{ name: string; sessionId: string }, void>(
    async (streams) => {
      await this.stored.heartbeat(streams, this.clock.nowMs());
      return streams.map(() => undefined);
    },
    HEARTBEAT_BATCHING,
  );
  /** Emitted with a runner's name when its token is revoked: its stream must close. */
  readonly revoked = new Signal<string>();

  constructor(
    private readonly repo: RunnerRepository,
    private readonly clock: Clock,
    /** The running executions of every runner, by runner name (one read for the whole list). */
    private readonly running: () => Promise<ReadonlyMap<string, string[]>>,
    private readonly bus: Bus,
    private readonly stored: RunnerSessionRepository,
    /** Names this replica in `runner_sessions`. */
    private readonly replica: string,
    private readonly leaseTimeoutMs: number,
  ) {
    // A revocation through any replica closes the stream wherever the runner is connected.
    bus.subscribe('runner_revoked', (name) => this.revoked.emit(name));
  }

  /** Issues a token for a new runner; 409 when the name is taken. */
  async create(name: string, labels: Record<string, string>, createdBy: string | null): Promise<RunnerToken> {
    const secret = randomBytes(32).toString('base64url');
    const row = { name, tokenHash: digest(secret), labels, timeCreated: nowS(this.clock), createdBy, revokedAt: null };
    if (!(await this.repo.insert(row))) throw conflict('RunnerExists', `A runner named ${name} exists already; delete it first to issue a new token.`);
    return { name, labels, token: this.token(name, secret) };
  }

  /** Issues (or rotates) the token of a runner the control plane starts itself. */
  async rotate(name: string, labels: Record<string, string>): Promise<RunnerToken> {
    const secret = randomBytes(32).toString('base64url');
    await this.repo.upsert({ name, tokenHash: digest(secret), labels, timeCreated: nowS(this.clock), createdBy: null, revokedAt: null });
    return { name, labels, token: this.token(name, secret) };
  }

  /** Revokes a runner's token; its open stream, if any, is closed by the caller. */
  async delete(name: string): Promise<void> {
    if (!(await this.repo.delete(name))) throw notFound(`No runner is named ${name}.`);
    await this.bus.publish('runner_revoked', name);
  }

  /** The runner a token belongs to, or null when the token is not valid. */
  async authenticate(token: string | undefined): Promise<string | null> {
    if (!token) return null;
    const parts = token.trim().split('.');
    if (parts.length !== 3 || parts[0] !== TOKEN_PREFIX) return null;
    const name = Buffer.from(parts[1] ?? '', 'base64url').toString('utf8');
    if (!RUNNER_NAME.test(name)) return null;
    const row = await this.repo.get(name);
    const given = Buffer.from(digest(parts[2] ?? ''), 'hex');
    // Compare against a dummy digest when the runner is unknown, so timing tells nothing.
    const stored = Buffer.from(row?.tokenHash ?? digest(randomUUID()), 'hex');
    const ok = timingSafeEqual(given, stored);
    return ok && row && row.revokedAt === null ? name : null;
  }

  /** Labels a runner was registered with. */
  private async labelsOf(name: string): Promise<Record<string, string>> {
    return (await this.repo.get(name))?.labels ?? {};
  }

  /** Opens a new session for a runner that said hello, replacing its previous one. */
  async open(hello: RunnerHello): Promise<{ session: RunnerSession; replaced: boolean }> {
    const labels = await this.labelsOf(hello.name);
    const nowMs = this.clock.nowMs();
    const session: RunnerSession = {
      sessionId: randomUUID(),
      name: hello.name,
      version: hello.version,
      labels: { ...labels, ...hello.labels },
      slots: hello.slots,
      connectedAtMs: nowMs,
      peer: hello.peer,
      sshPublicKey: hello.sshPublicKey,
      lastHeartbeatMs: nowMs,
      draining: false,
    };
    const replaced = this.sessions.has(hello.name);
    this.sessions.set(hello.name, session);
    const { draining: _, ...stored } = session;
    await this.stored.put({ ...stored, replica: this.replica, labels: { ...session.labels } });
    return { session, replaced };
  }

  /**
   * A session's heartbeat arrived. Those of 200 ms, and those that arrive while others are
   * stored, are stored together, in one statement (`HEARTBEAT_BATCHING`): a thousand runners'
   * heartbeats cost a few statements a second. Resolves once it is stored.
   */
  async heartbeat(session: RunnerSession): Promise<void> {
    session.lastHeartbeatMs = this.clock.nowMs();
    await this.heartbeats.add({ name: session.name, sessionId: session.sessionId });
  }

  /** Stores now the heartbeats waiting for their group (before closing). */
  storeHeartbeats(): Promise<void> {
    return this.heartbeats.flush();
  }

  /** A session's runner is shutting down: it takes no new work. */
  async drain(session: RunnerSession): Promise<void> {
    session.draining = true;
    await this.stored.drain(session.name, session.sessionId);
  }

  /** Forgets a session unless the runner has reconnected since (then the newer one stays). */
  close(name: string, sessionId: string): boolean {
    // Through any replica the runner may have reconnected to meanwhile: the stored session
    // goes only if it is still this one.
    this.stored.remove(name, sessionId).catch(() => undefined);
    if (this.sessions.get(name)?.sessionId !== sessionId) return false;
    this.sessions.delete(name);
    return true;
  }

  /** The current session of a runner. */
  session(name: string): RunnerSession | undefined {
    return this.sessions.get(name);
  }

  /** Whether this session is the runner's current one. */
  isCurrent(name: string, sessionId: string): boolean {
    return this.sessions.get(name)?.sessionId === sessionId;
  }

  /** Every current session. */
  connected(): RunnerSession[] {
    return [...this.sessions.values()];
  }

  /** Every known runner with its state, for `GET /v1/runner/`, wherever it is connected. */
  async list(): Promise<Runner[]> {
    const runners: Runner[] = [];
    const live = await this.stored.live(this.clock.nowMs() - this.leaseTimeoutMs);
    const running = await this.running();
    for (const row of await this.repo.all()) {
      const s = this.sessions.get(row.name) ?? live.get(row.name);
      const executions = running.get(row.name) ?? [];
      runners.push({
        name: row.name,
        state: !s ? 'disconnected' : s.draining ? 'draining' : 'connected',
        labels: s ? { ...s.labels } : row.labels,
        version: s?.version ?? null,
        slots: s?.slots ?? 0,
        free_slots: s ? Math.max(0, s.slots - executions.length) : 0,
        last_heartbeat: s ? Math.floor(s.lastHeartbeatMs / 1000) : null,
        connected_since: s ? Math.floor(s.connectedAtMs / 1000) : null,
        peer: s?.peer ?? null,
        ssh_public_key: s?.sshPublicKey || null,
        executions,
        time_created: row.timeCreated,
      });
    }
    return runners;
  }

  private token(name: string, secret: string): string {
    return `${TOKEN_PREFIX}.${Buffer.from(name).toString('base64url')}.${secret}`;
  }
}
