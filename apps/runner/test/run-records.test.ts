// The agent's run records on disk: known_hosts and process groups of runs, and the orphans a
// previous runner process left, killed at start only when they are still ansible-playbook.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fileRunRecords } from '../src/agent/index.js';

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function workRoot(): string {
  const d = mkdtempSync(join(tmpdir(), 'carapace-records-'));
  dirs.push(d);
  return join(d, 'executions');
}

/** A process group whose leader's command line says `name` (`sh -c ... name`). */
async function group(name: string): Promise<ChildProcess> {
  // `; true` keeps sh from exec-ing sleep, which would replace its command line
  const child = spawn('sh', ['-c', 'sleep 60; true', name], { detached: true, stdio: 'ignore' });
  children.push(child);
  await new Promise((resolve) => child.once('spawn', resolve));
  return child;
}

const exited = (child: ChildProcess) => new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(null) : child.once('exit', resolve)));

describe('the run records of the agent', () => {
  it('keeps a run known_hosts (0600) and process group, and forgets both', () => {
    const records = fileRunRecords(workRoot());
    expect(records.recover()).toEqual([]);
    expect(statSync(records.workRoot).mode & 0o777).toBe(0o700);
    const file = records.writeKnownHosts('e1', '10.0.0.1 ssh-ed25519 AAAA\n');
    expect(readFileSync(file, 'utf8')).toBe('10.0.0.1 ssh-ed25519 AAAA\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    records.recordProcessGroup('e1', 4242);
    expect(readFileSync(join(records.workRoot, 'e1.pgid'), 'utf8')).toBe('4242\n');
    records.forget('e1');
    expect(readdirSync(records.workRoot)).toEqual([]);
  });

  it('at start, kills the process groups left that are still ansible, spares a reused pid, and forgets them all', async () => {
    const root = workRoot();
    const first = fileRunRecords(root);
    first.recover();
    const orphan = await group('ansible-playbook');
    const stranger = await group('not-ours');
    first.recordProcessGroup('left', orphan.pid ?? 0);
    first.recordProcessGroup('reused', stranger.pid ?? 0);
    writeFileSync(join(root, 'garbage.pgid'), 'not a number\n');

    const killed = fileRunRecords(root).recover();
    expect(killed).toEqual([{ executionId: 'left', pgid: orphan.pid }]);
    await exited(orphan);
    expect(orphan.signalCode).toBe('SIGKILL');
    expect(stranger.exitCode).toBeNull();
    expect(stranger.signalCode).toBeNull();
    expect(readdirSync(root)).toEqual([]);
    expect(existsSync(join(root, 'left.pgid'))).toBe(false);
  });
});
