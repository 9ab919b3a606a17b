import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from './database.js';
import type { Bus, BusChannel, BusHandler, BusOrigin } from './ports.js';

export type { Bus, BusChannel, BusHandler, BusOrigin } from './ports.js';

const CHANNELS: readonly BusChannel[] = ['work', 'execution', 'cancel', 'runner_revoked', 'facts'];
const PREFIX = 'carapace_';
/** PostgreSQL refuses a notification payload of 8000 bytes or more. */
const MAX_PAYLOAD_BYTES = 7900;

class Handlers {
  private readonly byChannel = new Map<BusChannel, Set<BusHandler>>();
  private readonly resync = new Set<() => void>();

  subscribe(channel: BusChannel, handler: BusHandler): () => void {
    let set = this.byChannel.get(channel);
    if (!set) {
      set = new Set();
      this.byChannel.set(channel, set);
    }
    set.add(handler);
    return () => set.delete(handler);
  }

  onResync(handler: () => void): () => void {
    this.resync.add(handler);
    return () => this.resync.delete(handler);
  }

  deliver(channel: BusChannel, payload: string, from: BusOrigin): void {
    for (const handler of [...(this.byChannel.get(channel) ?? [])]) {
      try {
        handler(payload, from);
      } catch {
        // A handler's failure is its own.
      }
    }
  }

  resyncAll(): void {
    for (const handler of [...this.resync]) {
      try {
        handler();
      } catch {
        // A handler's failure is its own.
      }
    }
  }
}

function checkPayload(payload: string): void {
  if (Buffer.byteLength(payload) > MAX_PAYLOAD_BYTES) throw new Error(`a bus message is at most ${MAX_PAYLOAD_BYTES} bytes`);
}

/** The bus of a single control plane (SQLite): in memory, after the publisher's commit. */
export class MemoryBus implements Bus {
  private readonly handlers = new Handlers();

  constructor(private readonly db: Database) {}

  async publish(channel: BusChannel, payload = ''): Promise<void> {
    checkPayload(payload);
    this.db.afterCommit(() => this.handlers.deliver(channel, payload, 'here'));
  }

  subscribe(channel: BusChannel, handler: BusHandler): () => void {
    return this.handlers.subscribe(channel, handler);
  }

  onResync(handler: () => void): () => void {
    return this.handlers.onResync(handler);
  }

  async close(): Promise<void> {}
}

/**
 * A database whose engine sends messages (PostgreSQL's `PostgresDatabase`): `notify` sends one
 * at the caller's commit, and a connection of the bus's own listens with `connectionOptions`.
 */
export interface NotifyingDatabase extends Database {
  notify(channel: string, payload: string): Promise<void>;
  connectionOptions(): pg.ClientConfig;
}

/** How long messages sent outside a transaction wait for others to go out with (`PostgresBus.soon`). */
const NOTIFY_WINDOW_MS = 5;

/** How long a lost listening connection waits before it connects again, at most. */
const RECONNECT_MAX_MS = 5000;

/**
 * The bus of replicas sharing a PostgreSQL database: `pg_notify` in the publisher's
 * transaction (PostgreSQL delivers at commit), and one connection of this replica, outside
 * the pool, that `LISTEN`s on every channel. When that connection is lost it comes back with
 * a growing delay, listens again, and asks everyone to look again (`onResync`).
 */
export class PostgresBus implements Bus {
  private readonly handlers = new Handlers();
  /** Names this replica in its messages, which it delivers to itself without the round trip. */
  private readonly origin = randomUUID();
  /** Messages of this turn waiting to go out together (`soon`), and their flush. */
  private readonly pending = new Set<string>();
  private flushTimer: NodeJS.Timeout | null = null;
  private client: pg.Client | null = null;
  private closed = false;
  private attempts = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: NotifyingDatabase,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    await this.connect();
  }

  async publish(channel: BusChannel, payload = ''): Promise<void> {
    checkPayload(payload);
    const text = `${this.origin}|${payload}`;
    if (this.db.inTransaction()) {
      await this.db.notify(PREFIX + channel, text);
      this.db.afterCommit(() => this.handlers.deliver(channel, payload, 'here'));
      return;
    }
    this.handlers.deliver(channel, payload, 'here');
    this.soon(PREFIX + channel, text);
  }

  /**
   * Sends a message outside any transaction with the others of the next `NOTIFY_WINDOW_MS`,
   * the same ones once: one round trip for a burst (the steps and log chunks of many runs
   * become one message per run). The caller does not wait for the round trip; a failure is
   * logged (the others miss that wake-up: a follower wakes at the run's next message, its end
   * at the latest, which goes out with the transaction storing it; a dispatcher at its sweep).
   */
  private soon(channel: string, text: string): void {
    this.pending.add(`${channel}\n${text}`);
    this.flushTimer ??= setTimeout(() => void this.flush(), NOTIFY_WINDOW_MS);
  }

  /** Sends the messages `soon` holds. */
  private async flush(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    const batch = [...this.pending];
    this.pending.clear();
    if (batch.length === 0) return;
    const calls = sql.join(
      batch.map((entry) => {
        const cut = entry.indexOf('\n');
        return sql`pg_notify(${entry.slice(0, cut)}, ${entry.slice(cut + 1)})`;
      }),
      sql`, `,
    );
    await this.db.run(sql`SELECT ${calls}`).catch((err: unknown) => this.log.warn({ err, messages: batch.length }, 'could not tell the other replicas'));
  }

  subscribe(channel: BusChannel, handler: BusHandler): () => void {
    return this.handlers.subscribe(channel, handler);
  }

  onResync(handler: () => void): () => void {
    return this.handlers.onResync(handler);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ ...this.db.connectionOptions(), application_name: 'carapace-control-plane-bus' });
    client.on('notification', (message) => {
      const channel = message.channel.startsWith(PREFIX) ? (message.channel.slice(PREFIX.length) as BusChannel) : null;
      const text = message.payload ?? '';
      const bar = text.indexOf('|');
      if (!channel || !CHANNELS.includes(channel) || bar < 0 || text.slice(0, bar) === this.origin) return;
      this.handlers.deliver(channel, text.slice(bar + 1), 'elsewhere');
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, null));
    await client.connect();
    for (const channel of CHANNELS) await client.query(`LISTEN ${PREFIX}${channel}`);
    this.client = client;
    this.attempts = 0;
  }

  private lost(client: pg.Client, err: Error | null): void {
    if (this.client !== client || this.closed) return;
    this.client = null;
    this.log.warn({ err }, 'the bus connection to PostgreSQL was lost; listening again');
    this.retry();
  }

  private retry(): void {
    if (this.closed) return;
    const delayMs = Math.min(RECONNECT_MAX_MS, 100 * 2 ** this.attempts++);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect().then(
        () => this.handlers.resyncAll(),
        (err: unknown) => {
          this.log.warn({ err, retryInMs: delayMs }, 'the bus could not listen on PostgreSQL');
          this.retry();
        },
      );
    }, delayMs);
    this.timer.unref();
  }
}

/** The bus of a database: built by its engine (`SqlEngine.openBus`): in memory on SQLite, `LISTEN`/`NOTIFY` on PostgreSQL. */
export function openBus(db: Database, log: Logger): Promise<Bus> {
  return db.engine.openBus(log);
}
