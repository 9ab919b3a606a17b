import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The file in the data directory naming the process of the control plane serving it. */
export const PID_FILE = 'control-plane.pid';

/** Whether a process of that id runs. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The id of the control plane serving this data directory, if one runs: the process its pid
 * file names, if alive (a stale file, left by a killed process, names none).
 */
export function liveProcess(dataDir: string): number | null {
  let pid: number;
  try {
    pid = Number.parseInt(readFileSync(join(dataDir, PID_FILE), 'utf8'), 10);
  } catch {
    return null;
  }
  return Number.isInteger(pid) && pid > 0 && pid !== process.pid && running(pid) ? pid : null;
}

/** Marks the data directory as served by this process; returns the unmark. */
export function markLive(dataDir: string): () => void {
  const file = join(dataDir, PID_FILE);
  writeFileSync(file, `${process.pid}\n`, { mode: 0o600 });
  return () => {
    try {
      if (Number.parseInt(readFileSync(file, 'utf8'), 10) === process.pid) rmSync(file, { force: true });
    } catch {
      // gone already
    }
  };
}
