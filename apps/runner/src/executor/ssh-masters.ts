// SSH connection multiplexing masters (ControlPersist) detach into their own session, so
// they outlive ansible-playbook's process group; each execution has its own control
// sockets, never reused, so the masters are told to exit as soon as the run is over.
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Asks every SSH master with a socket in `controlDir` to exit; never throws. */
export async function closeSshMasters(controlDir: string): Promise<void> {
  let sockets: string[];
  try {
    sockets = await readdir(controlDir);
  } catch {
    return;
  }
  await Promise.all(
    sockets.map(
      (name) =>
        new Promise<void>((resolve) => {
          execFile(
            'ssh',
            ['-o', `ControlPath=${join(controlDir, name)}`, '-O', 'exit', 'carapace-control-master'],
            { timeout: 5_000, killSignal: 'SIGKILL' },
            () => resolve(),
          );
        }),
    ),
  );
}
