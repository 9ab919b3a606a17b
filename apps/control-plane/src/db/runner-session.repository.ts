import { sql } from 'drizzle-orm';
import type { Database } from './database.js';

/** A runner's open stream as every replica sees it. */
export interface StoredSession {
  readonly name: string;
  readonly sessionId: string;
  readonly replica: string;
  readonly version: string;
  readonly labels: Record<string, string>;
  readonly slots: number;
  readonly connectedAtMs: number;
  readonly lastHeartbeatMs: number;
  readonly peer: string;
  readonly sshPublicKey: string;
  readonly draining: boolean;
}

interface Row {
  name: string;
  session_id: string;
  replica: string;
  version: string;
  labels: string;
  slots: number;
  connected_at_ms: number;
  last_heartbeat_ms: number;
  peer: string;
  ssh_public_key: string;
  draining: number;
}

/** The runner_sessions table: which replica holds each runner's stream, and its last heartbeat. */
export class RunnerSessionRepository {
  constructor(private readonly db: Database) {}

  /** Records a runner's new stream, replacing the one it had (through any replica). */
  async put(s: Omit<StoredSession, 'draining'>): Promise<void> {
    await this.db.run(sql`
      INSERT INTO runner_sessions (name, session_id, replica, version, labels, slots, connected_at_ms, last_heartbeat_ms, peer, ssh_public_key, draining)
      VALUES (${s.name}, ${s.sessionId}, ${s.replica}, ${s.version}, ${JSON.stringify(s.labels)}, ${s.slots}, ${s.connectedAtMs},
              ${s.lastHeartbeatMs}, ${s.peer}, ${s.sshPublicKey}, 0)
      ON CONFLICT (name) DO UPDATE SET session_id = excluded.session_id, replica = excluded.replica, version = excluded.version,
        labels = excluded.labels, slots = excluded.slots, connected_at_ms = excluded.connected_at_ms,
        last_heartbeat_ms = excluded.last_heartbeat_ms, peer = excluded.peer, ssh_public_key = excluded.ssh_public_key, draining = 0`);
  }

  /** Renews the heartbeat time of streams (those still their runner's), in one statement. */
  async heartbeat(streams: readonly { name: string; sessionId: string }[], nowMs: number): Promise<void> {
    if (streams.length === 0) return;
    const keys = this.db.engine.rowSource(streams.map((s) => [s.name, s.sessionId]), ['text', 'text']);
    await this.db.run(sql`UPDATE runner_sessions SET last_heartbeat_ms = ${nowMs} WHERE (name, session_id) IN (${keys})`);
  }

  /** Marks a stream's runner as draining. */
  async drain(name: string, sessionId: string): Promise<void> {
    await this.db.run(sql`UPDATE runner_sessions SET draining = 1 WHERE name = ${name} AND session_id = ${sessionId}`);
  }

  /** Forgets a stream unless the runner has opened another since. */
  async remove(name: string, sessionId: string): Promise<void> {
    await this.db.run(sql`DELETE FROM runner_sessions WHERE name = ${name} AND session_id = ${sessionId}`);
  }

  /** Every stream whose heartbeat is newer than `sinceMs` (older ones died with their replica). */
  async live(sinceMs: number): Promise<Map<string, StoredSession>> {
    const rows = await this.db.all<Row>(sql`SELECT * FROM runner_sessions WHERE last_heartbeat_ms > ${sinceMs}`);
    return new Map(
      rows.map((r) => [
        r.name,
        {
          name: r.name,
          sessionId: r.session_id,
          replica: r.replica,
          version: r.version,
          labels: JSON.parse(r.labels) as Record<string, string>,
          slots: r.slots,
          connectedAtMs: r.connected_at_ms,
          lastHeartbeatMs: r.last_heartbeat_ms,
          peer: r.peer,
          sshPublicKey: r.ssh_public_key,
          draining: r.draining === 1,
        },
      ]),
    );
  }
}
