import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { scheduledBackups, scheduledName, takeBackup, type BackupReport } from './backup.js';

type ScheduleConfig = Pick<Config, 'dataDir' | 'secrets' | 'database' | 'backup'>;

/**
 * Scheduled backups (`backup.intervalS`, SQLite): every interval, a backup as `backup FILE`
 * writes it, into `backup.dir` (`carapace-<UTC time>.backup`), then only the newest
 * `backup.keep` of that folder's scheduled backups are kept. One at a time; a failure is
 * logged and the next interval tries again.
 */
export class BackupSchedule {
  private running: Promise<unknown> | null = null;

  constructor(
    private readonly config: ScheduleConfig,
    private readonly log: Logger,
  ) {}

  private get dir(): string {
    return this.config.backup.dir ?? join(this.config.dataDir, 'backups');
  }

  /** Takes one backup now and prunes the old ones. */
  async runOnce(now = new Date()): Promise<BackupReport> {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const report = await takeBackup(this.config, join(this.dir, scheduledName(now)));
    const all = scheduledBackups(this.dir);
    const pruned = all.slice(0, Math.max(0, all.length - this.config.backup.keep));
    for (const old of pruned) rmSync(old, { force: true });
    this.log.info({ file: report.file, bytes: report.bytes, ms: report.ms, pruned: pruned.length }, 'scheduled backup written');
    return report;
  }

  /** Starts the schedule (nothing when `intervalS` is 0); returns its stop, which waits for a backup under way. */
  start(): () => Promise<void> {
    if (this.config.backup.intervalS <= 0) return async () => undefined;
    const timer = setInterval(() => {
      if (this.running) return;
      this.running = this.runOnce()
        .catch((err: unknown) => this.log.error({ err: { message: (err as Error).message } }, 'scheduled backup failed'))
        .finally(() => (this.running = null));
    }, this.config.backup.intervalS * 1000);
    timer.unref();
    this.log.info({ dir: this.dir, intervalS: this.config.backup.intervalS, keep: this.config.backup.keep }, 'scheduled backups on');
    return async () => {
      clearInterval(timer);
      await this.running;
    };
  }
}
