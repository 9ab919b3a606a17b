import { execFileSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServerFactsSchema } from '@carapace/models';
import { Value } from 'typebox/value';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatherFacts, openSession, preflight, SshError, type GatherFactsOptions, type SshTarget } from '../src/ssh/index.js';
import { generateClientKey, sshKeygen, startSilentServer, startSshd, type SilentServer, type TestSshd } from './support/sshd.js';

const COMMAND_STARTED = /Starting session: command for /;

let sshd: TestSshd;
let silent: SilentServer;
let keys: string;
/** The host key preflight recorded on first contact. */
let recorded: string;

beforeAll(async () => {
  sshd = await startSshd();
  silent = await startSilentServer();
  keys = mkdtempSync(join(tmpdir(), 'carapace-facts-keys-'));
  const [first] = await preflight([target()], { privateKey: sshd.clientKey.privateKey, timeoutMs: 10_000 });
  if (!first?.ok || first.hostKey === null) throw new Error(`preflight against the test sshd failed: ${first?.reason}`);
  recorded = first.hostKey;
});

afterAll(async () => {
  await sshd?.stop();
  await silent?.stop();
  if (keys) rmSync(keys, { recursive: true, force: true });
});

function target(overrides: Partial<SshTarget> = {}): SshTarget {
  return { address: sshd.host, port: sshd.port, username: 'root', expectedHostKey: null, ...overrides };
}

function options(overrides: Partial<GatherFactsOptions> = {}): GatherFactsOptions {
  return { privateKey: sshd.clientKey.privateKey, timeoutMs: 15_000, ...overrides };
}

async function rejection(promise: Promise<unknown>): Promise<SshError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(SshError);
    return err as SshError;
  }
  throw new Error('expected a rejection');
}

/** /proc/meminfo's MemTotal of this machine, in bytes. */
function memTotal(): number {
  const m = /^MemTotal:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'));
  return Number(m?.[1]) * 1024;
}

describe('gatherFacts against a real sshd, as root on this machine', () => {
  it('gathers this machine’s facts, with the host key preflight recorded', async () => {
    const now = 1_750_000_000_123;
    const { facts, hostKey } = await gatherFacts(target({ expectedHostKey: recorded }), options({ now: () => now }));
    expect(hostKey).toBe(recorded);
    expect(hostKey).toBe(sshd.hostKey);
    expect(Value.Check(ServerFactsSchema, facts)).toBe(true);

    expect(facts.hostname).toBe(hostname());
    expect(facts.fqdn).toBe(execFileSync('hostname', ['-f'], { encoding: 'utf8' }).trim());
    expect(facts.gathered_at).toBe(1_750_000_000);

    const osRelease = readFileSync('/etc/os-release', 'utf8');
    expect(facts.os.id).toBe('debian');
    expect(facts.os.version_id).toBe(/^VERSION_ID="?([^"\n]*)"?$/m.exec(osRelease)?.[1]);
    expect(facts.os.pretty_name).toMatch(/^Debian GNU\/Linux/);
    expect(facts.os.kernel).toBe(execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim());

    expect(facts.memory.total_bytes).toBeGreaterThan(0);
    expect(facts.memory.total_bytes).toBe(memTotal());
    expect(facts.cpu.count).toBeGreaterThanOrEqual(1);
    expect(facts.cpu.count).toBe(cpus().length);
    expect(facts.cpu.model).not.toBe('');

    // The disks as lsblk sees them that have a node in this machine's /dev, RAM disks (zram, brd) left out.
    const lsblk = JSON.parse(execFileSync('lsblk', ['-J', '-b', '-O'], { encoding: 'utf8' })) as { blockdevices: { name: string; 'maj:min': string }[] };
    const nodes = new Set(
      readdirSync('/dev')
        .map((name) => lstatSync(join('/dev', name)))
        .filter((st) => st.isBlockDevice())
        .map((st) => `${Math.floor(st.rdev / 256) & 0xfff}:${(st.rdev & 0xff) | ((st.rdev >> 12) & 0xfff00)}`),
    );
    const expectedDisks = lsblk.blockdevices.filter((d) => nodes.has(d['maj:min'])).map((d) => d.name).filter((name) => !/^z?ram\d+$/.test(name));
    expect(Array.isArray(facts.disks)).toBe(true);
    expect(facts.disks.map((d) => d.name)).toEqual(expectedDisks);
    for (const disk of facts.disks) {
      expect(disk.path).toMatch(/^\/dev\//);
      expect(disk.size_bytes).toBeGreaterThanOrEqual(0);
      expect(Array.isArray(disk.partitions)).toBe(true);
    }

    // Interfaces: loopback with 127.0.0.1, and the default route as `ip` reports it.
    const lo = facts.interfaces.find((i) => i.name === 'lo');
    expect(lo?.addresses).toContainEqual({ family: 'inet', address: '127.0.0.1', prefix: 8 });
    expect(lo?.default_route).toBe(false);
    const routes = JSON.parse(execFileSync('ip', ['-j', '-4', 'route', 'show', 'default'], { encoding: 'utf8' }) || '[]') as { dev?: string; prefsrc?: string }[];
    const defaultDev = routes[0]?.dev;
    if (defaultDev === undefined) {
      expect(facts.default_ipv4).toBeNull();
      expect(facts.interfaces.filter((i) => i.default_route)).toEqual([]);
    } else {
      const iface = facts.interfaces.find((i) => i.name === defaultDev);
      expect(iface?.default_route).toBe(true);
      const firstV4 = iface?.addresses.find((a) => a.family === 'inet')?.address ?? null;
      expect(facts.default_ipv4).toBe(routes[0]?.prefsrc ?? firstV4);
    }
  });

  it('returns the host key to record on first contact', async () => {
    const { facts, hostKey } = await gatherFacts(target(), options());
    expect(hostKey).toBe(recorded);
    expect(facts.hostname).toBe(hostname());
  });

  it('finds the system tools whatever the login PATH', async () => {
    // This key's sessions run the command with a PATH where nothing is found: the script
    // must look in the system directories itself (a non-root PATH lacks /usr/sbin, say).
    const key = generateClientKey();
    sshd.authorize(key.publicKey, 'command="PATH=/nonexistent exec /bin/sh -c \\"$SSH_ORIGINAL_COMMAND\\""');
    const { facts } = await gatherFacts(target({ expectedHostKey: recorded }), options({ privateKey: key.privateKey }));
    expect(facts.hostname).toBe(hostname());
    expect(facts.interfaces.map((i) => i.name)).toContain('lo');
  });

  it('says why when the account cannot run the script', async () => {
    // nobody logs in with the key, but its login shell (nologin) runs nothing.
    const error = await rejection(gatherFacts(target({ username: 'nobody', expectedHostKey: recorded }), options()));
    expect(error.kind).toBe('facts');
    expect(error.message).toBe(
      `127.0.0.1:${sshd.port}: cannot gather facts: no hostname section in the output (the script exited with 1): This account is currently not available.`,
    );
  });

  it('refuses to gather from a server whose host key changed, before running anything', async () => {
    const other = sshKeygen(keys, 'other-ed25519', 'ed25519');
    const mark = sshd.mark();
    const error = await rejection(gatherFacts(target({ expectedHostKey: other.publicKey }), options()));
    expect(error.kind).toBe('host-key-mismatch');
    expect(error.message).toMatch(new RegExp(`^127\\.0\\.0\\.1:${sshd.port}: host key changed \\(expected ssh-ed25519 SHA256:\\S+, got ssh-ed25519 SHA256:\\S+\\)$`));
    expect(error.expectedHostKey).toBe(other.publicKey);
    expect(error.presentedHostKey).toBe(recorded);
    const log = await sshd.waitForLog(/(Connection closed|Disconnected from|Received disconnect|disconnected by|Connection reset).*\[preauth\]/, mark);
    expect(log).not.toMatch(/Accepted publickey/);
    expect(log).not.toMatch(COMMAND_STARTED);
  });

  it('reports a command that outlives its deadline as a timeout and closes the connection', async () => {
    const mark = sshd.mark();
    const start = performance.now();
    const error = await rejection(gatherFacts(target({ expectedHostKey: recorded }), options({ commandTimeoutMs: 1 })));
    expect(performance.now() - start).toBeLessThan(5000);
    expect(error.kind).toBe('timeout');
    expect(error.message).toBe(`127.0.0.1:${sshd.port}: fact gathering timed out after 1 ms`);
    // The server sees the client go away.
    await sshd.waitForLog(/Broken pipe|Connection reset|Disconnected from|Connection closed|Received disconnect/, mark);
  });

  it('reports a server that never speaks as a timeout within timeoutMs', async () => {
    const start = performance.now();
    const error = await rejection(gatherFacts({ address: '127.0.0.1', port: silent.port, username: 'root', expectedHostKey: recorded }, options({ timeoutMs: 500 })));
    const ms = performance.now() - start;
    expect(error.kind).toBe('timeout');
    expect(error.message).toBe(`127.0.0.1:${silent.port}: timed out after 500 ms`);
    expect(ms).toBeLessThan(500 + 1500); // bounded by the timeout, with room for a loaded machine
  });
});

describe('openSession against a real sshd', () => {
  it('runs commands with stdin, and reports exit status, signal and both outputs', async () => {
    const session = await openSession(target({ expectedHostKey: recorded }), options());
    try {
      expect(session.hostKey).toBe(recorded);
      const cat = await session.exec('cat; echo oops >&2; exit 3', { stdin: 'hello\n', timeoutMs: 10_000, what: 'cat' });
      expect(cat).toEqual({ code: 3, signal: null, stdout: 'hello\n', stderr: 'oops\n' });
      const killed = await session.exec('kill -TERM $$', { timeoutMs: 10_000, what: 'kill' });
      expect(killed.code).toBeNull();
      expect(killed.signal).toBe('SIGTERM');
      const big = await session.exec('head -c 300000 /dev/zero', { timeoutMs: 10_000, what: 'head' });
      expect(big.stdout.length).toBe(300_000);
      const tooBig = await rejection(session.exec('head -c 300000 /dev/zero', { timeoutMs: 10_000, what: 'head', maxOutputBytes: 1000 }));
      expect(tooBig.kind).toBe('command');
      expect(tooBig.message).toBe(`127.0.0.1:${sshd.port}: head printed more than 1000 bytes`);
      // The connection was abandoned with the command: later commands fail cleanly.
      const after = await rejection(session.exec('true', { timeoutMs: 10_000, what: 'true' }));
      expect(after.kind).toBe('protocol');
    } finally {
      await session.close();
      await session.close();
    }
  });

  it('times out a long command within its deadline', async () => {
    const session = await openSession(target({ expectedHostKey: recorded }), options());
    try {
      const start = performance.now();
      const error = await rejection(session.exec('sleep 5', { timeoutMs: 300, what: 'the sleep' }));
      expect(error.kind).toBe('timeout');
      expect(error.message).toBe(`127.0.0.1:${sshd.port}: the sleep timed out after 300 ms`);
      expect(performance.now() - start).toBeLessThan(300 + 1500); // not the 5 s of the sleep
    } finally {
      await session.close();
    }
  });
});
