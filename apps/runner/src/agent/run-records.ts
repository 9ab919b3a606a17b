// The file-system side of the agent's `RunRecords` port: `<workRoot>/<id>.known_hosts` and
// `<workRoot>/<id>.pgid`, and the orphans a previous runner process left.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { OrphanRun, RunRecords } from './agent.types.js';

/** Run records in `workRoot` (created 0700 by `recover()`). */
export function fileRunRecords(workRoot: string): RunRecords {
  const knownHosts = (id: string) => join(workRoot, `${id}.known_hosts`);
  const pgidFile = (id: string) => join(workRoot, `${id}.pgid`);
  return {
    workRoot,
    recover(): OrphanRun[] {
      mkdirSync(workRoot, { recursive: true, mode: 0o700 });
      const killed: OrphanRun[] = [];
      for (const file of readdirSync(workRoot)) {
        if (!file.endsWith('.pgid')) continue;
        const pgid = Number(readFileSync(join(workRoot, file), 'utf8').trim());
        if (Number.isInteger(pgid) && pgid > 1 && isAnsible(pgid)) {
          try {
            process.kill(-pgid, 'SIGKILL');
            killed.push({ executionId: file.slice(0, -'.pgid'.length), pgid });
          } catch {
            // Already gone.
          }
        }
        rmSync(join(workRoot, file), { force: true });
      }
      return killed;
    },
    writeKnownHosts(executionId, lines) {
      const file = knownHosts(executionId);
      writeFileSync(file, lines, { mode: 0o600 });
      return file;
    },
    recordProcessGroup(executionId, pgid) {
      writeFileSync(pgidFile(executionId), `${pgid}\n`, { mode: 0o600 });
    },
    forget(executionId) {
      rmSync(knownHosts(executionId), { force: true });
      rmSync(pgidFile(executionId), { force: true });
    },
  };
}

/** Whether the process is still an ansible-playbook (the pid was not reused since). */
function isAnsible(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('ansible');
  } catch {
    return false;
  }
}
