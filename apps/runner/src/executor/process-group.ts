// Signals to the process group of a detached child (its pgid is its pid).
import { setTimeout as sleep } from 'node:timers/promises';

/** Sends a signal to every process of a group; false when the group is gone. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

/** Whether any process of the group still exists. */
export function groupExists(pgid: number): boolean {
  return signalGroup(pgid, 0);
}

/**
 * Waits until the group is empty, or until `deadline()` says to give up; true when it is
 * gone. The members are not our children once the leader has exited, so nothing notifies
 * their end: this polls, briefly.
 */
export async function waitForGroupExit(pgid: number, giveUp: () => boolean, intervalMs = 20): Promise<boolean> {
  while (groupExists(pgid)) {
    if (giveUp()) return false;
    await sleep(intervalMs);
  }
  return true;
}
