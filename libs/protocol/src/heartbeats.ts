/** A runner's heartbeats while its stream is open (`startHeartbeats`). */
export interface Heartbeats {
  stop(): void;
}

/**
 * Calls `beat` once every `periodMs`, the first time at a random moment of the first period:
 * runners that connect together (a control plane restarted, a replica's runners failing over
 * to another) then do not all beat at the same instant for as long as they stay connected.
 * The timers do not keep the process alive.
 */
export function startHeartbeats(beat: () => void, periodMs: number): Heartbeats {
  let timer: NodeJS.Timeout = setTimeout(() => {
    beat();
    timer = setInterval(beat, periodMs);
    timer.unref();
  }, Math.random() * periodMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
