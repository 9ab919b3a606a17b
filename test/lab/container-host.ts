/**
 * A lab host: `LabHost`, a systemd-nspawn container in its slot's netns (root file system an
 * overlay on the image or a copy, its identity, boot, stop, reboot, exec with nsenter, loop
 * disks). It is also the base class of the VM host (vm-host.ts).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { chmod, mkdir, open, readFile, rm, writeFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { debug } from './debug.js';
import type { CloudInitSeed, ExecOptions, ExecResult, HostKind, HostSetup, LabDisk } from './host-types.js';
import { NO_DNS_RESOLV_CONF } from './image.js';
import { CONTAINER_PATH, DMI_PRODUCT_UUID, LAB_GATEWAY, machineName, slotAddress } from './naming.js';
import { setupNetwork } from './network.js';
import { cgroupDirs, cleanupSlot, hostDir, readOwner, stopContainer, writeOwner } from './slots.js';
import type { SlotOwner } from './slots.js';
import { probeTcp } from './ssh.js';
import { CGROUP_WRAPPER, childrenOf, exists, isPidNamespaceInit, processStartTime, removeCgroupTree, removeTree, run, shellQuote, sleep, tail } from './sys.js';

/** One booted (or stopped) lab host. */
export class LabHost {
  /** Slot number N. */
  readonly slot: number;
  /** Machine name `carlabN` (netns, nspawn machine). */
  readonly machine: string;
  /** Hostname (also its /etc/hosts name in the lab). */
  readonly name: string;
  readonly ip: string;
  /** Host directory on the machine. */
  readonly dir: string;
  /** The host's root file system on the machine. */
  readonly root: string;
  readonly consoleLog: string;
  readonly disks: LabDisk[] = [];
  private nspawn: ChildProcess | undefined;
  private nspawnStart: string | undefined;
  private leader: number | undefined;
  private stopping = false;
  private exitWaiters: (() => void)[] = [];
  private restartWaiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  protected rootfsMode: 'overlay' | 'copy' | 'vm' = 'overlay';
  /** A container on this machine's kernel, or a virtual machine (see {@link VmHost}). */
  readonly kind: HostKind;

  /** @internal */
  constructor(protected readonly setup: HostSetup) {
    this.kind = setup.kind;
    this.slot = setup.slot;
    this.machine = machineName(setup.slot);
    this.name = setup.hostname;
    this.ip = slotAddress(setup.slot);
    this.dir = hostDir(setup.slot);
    // A VM's root file system is a qcow2 overlay of the image's disk, not a directory.
    this.root = setup.kind === 'vm' ? join(this.dir, 'root.qcow2') : join(this.dir, 'root');
    this.consoleLog = join(this.dir, 'console.log');
  }

  /** The nspawn process's pid while the host runs. */
  get pid(): number | undefined {
    return this.nspawn?.pid;
  }
  /** The container's init (PID 1 inside) as seen from the machine. */
  get initPid(): number | undefined {
    return this.leader;
  }
  get running(): boolean {
    return this.nspawn !== undefined;
  }
  get mode(): 'overlay' | 'copy' | 'vm' {
    return this.rootfsMode;
  }

  /** @internal Creates the host's root file system, files and network. */
  async provision(mode: 'auto' | 'overlay' | 'copy', allHosts: readonly { name: string; ip: string }[], sshPublicKey: string | undefined): Promise<void> {
    await removeTree(this.dir);
    await mkdir(this.dir, { recursive: true });
    const lower = this.setup.image.rootfs;
    let overlayError: string | undefined;
    if (mode !== 'copy') {
      for (const d of ['upper', 'work', 'root']) await mkdir(join(this.dir, d));
      const r = await run(
        'mount',
        ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${join(this.dir, 'upper')},workdir=${join(this.dir, 'work')}`, this.root],
        { check: false },
      );
      if (r.exitCode === 0) this.rootfsMode = 'overlay';
      else if (mode === 'overlay') throw new Error(`overlay mount for ${this.machine} failed: ${r.stderr.trim()}`);
      else {
        overlayError = r.stderr.trim();
        await removeTree(this.dir);
        await mkdir(this.dir, { recursive: true });
      }
    }
    if (mode === 'copy' || overlayError !== undefined) {
      if (overlayError !== undefined) this.setup.log(`overlayfs unavailable (${overlayError}); copying the image for ${this.machine}`);
      await run('cp', ['-a', '--reflink=auto', lower, this.root]);
      this.rootfsMode = 'copy';
    }
    debug(`${this.machine}: root file system (${this.rootfsMode}) ready`);
    await this.writeIdentity(allHosts, sshPublicKey);
    debug(`${this.machine}: identity written`);
    await setupNetwork(this.slot);
    debug(`${this.machine}: network ready`);
    await this.recordOwner();
  }

  protected async writeIdentity(allHosts: readonly { name: string; ip: string }[], sshPublicKey: string | undefined): Promise<void> {
    const etc = join(this.root, 'etc');
    await writeFile(join(etc, 'hostname'), `${this.name}\n`);
    await writeFile(
      join(etc, 'hosts'),
      [
        '127.0.0.1\tlocalhost',
        '::1\t\tlocalhost ip6-localhost ip6-loopback',
        'ff02::1\t\tip6-allnodes',
        'ff02::2\t\tip6-allrouters',
        '',
        '# carapace lab',
        `${LAB_GATEWAY}\tcarlab-gateway`,
        ...allHosts.map((h) => `${h.ip}\t${h.name}`),
        '',
      ].join('\n'),
    );
    await writeFile(join(etc, 'machine-id'), `${randomBytes(16).toString('hex')}\n`);
    await writeFile(join(this.dir, 'product_uuid'), `${randomUUID()}\n`);
    await rm(join(etc, 'resolv.conf'), { force: true });
    await writeFile(
      join(etc, 'resolv.conf'),
      this.setup.nameserver === undefined ? NO_DNS_RESOLV_CONF : `# carapace lab\nnameserver ${this.setup.nameserver}\n`,
    );
    // SSH host keys of its own (the image has none; sshd is configured for these two types).
    await Promise.all(
      ['ed25519', 'ecdsa'].map((t) =>
        run('ssh-keygen', ['-q', '-t', t, '-N', '', '-C', `root@${this.name}`, '-f', join(etc, `ssh/ssh_host_${t}_key`)]),
      ),
    );
    const seed = this.setup.seed;
    if (seed) {
      const nocloud = join(this.root, 'var/lib/cloud/seed/nocloud');
      await mkdir(nocloud, { recursive: true });
      await writeFile(join(nocloud, 'user-data'), seed.userData);
      await writeFile(join(nocloud, 'meta-data'), this.metaData(seed));
      if (seed.vendorData !== undefined) await writeFile(join(nocloud, 'vendor-data'), seed.vendorData);
      if (seed.networkConfig !== undefined) await writeFile(join(nocloud, 'network-config'), seed.networkConfig);
      // A first boot for cloud-init.
      for (const d of ['instance', 'instances', 'data', 'sem'])
        await rm(join(this.root, 'var/lib/cloud', d), { recursive: true, force: true });
      await rm(join(etc, 'cloud/cloud-init.disabled'), { force: true });
    } else {
      // No seed: cloud-init stays out of the boot entirely.
      await writeFile(join(etc, 'cloud/cloud-init.disabled'), 'carapace lab: no NoCloud seed\n');
      if (sshPublicKey !== undefined) {
        const ssh = join(this.root, 'root/.ssh');
        await mkdir(ssh, { recursive: true, mode: 0o700 });
        await chmod(ssh, 0o700);
        await writeFile(join(ssh, 'authorized_keys'), `${sshPublicKey.trim()}\n`, { mode: 0o600 });
      }
    }
  }

  protected metaData(seed: CloudInitSeed): string {
    if (typeof seed.metaData === 'string') return seed.metaData;
    const md: Record<string, string> = {
      'instance-id': `${this.machine}-${randomBytes(4).toString('hex')}`,
      'local-hostname': this.name,
      ...seed.metaData,
    };
    return Object.entries(md)
      .map(([k, v]) => `${k}: ${JSON.stringify(v)}\n`)
      .join('');
  }

  /** @internal The process fields of the slot's owner record. */
  protected processRecord(): Partial<SlotOwner> {
    return { nspawnPid: this.nspawn?.pid, nspawnStart: this.nspawnStart };
  }

  protected async recordOwner(): Promise<void> {
    const previous = await readOwner(this.slot);
    await writeOwner(this.slot, {
      pid: process.pid,
      pidStart: await processStartTime(process.pid),
      lab: this.setup.labName,
      persistent: this.setup.persistent,
      createdAt: previous?.createdAt ?? new Date().toISOString(),
      hostname: this.name,
      ip: this.ip,
      ...this.processRecord(),
      rootfsMode: this.rootfsMode,
      disks: this.disks,
      kind: this.kind,
    });
  }

  /** Boots the host (keeping its root file system) and waits until sshd answers. */
  async start(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (this.nspawn) throw new Error(`${this.machine} is already running`);
    const timeoutMs = opts.timeoutMs ?? this.setup.bootTimeoutMs;
    const dirs = await cgroupDirs(this.slot);
    for (const d of dirs) {
      await removeCgroupTree(d);
      await mkdir(d, { recursive: true });
    }
    await rm(`/run/systemd/nspawn/propagate/${this.machine}`, { recursive: true, force: true });
    const console = await open(this.consoleLog, 'a');
    await console.write(`\n--- carapace-lab: booting ${this.machine} (${this.name}) at ${new Date().toISOString()} ---\n`);
    const args = [
      '-D',
      this.root,
      '--boot',
      `--network-namespace-path=/run/netns/${this.machine}`,
      '--register=no',
      '--keep-unit',
      '-M',
      this.machine,
      '--console=read-only',
      '--link-journal=no',
      '--resolv-conf=off',
      ...this.disks.map((d) => `--bind=${diskNode(d)}:${d.device}`),
      ...((await exists(DMI_PRODUCT_UUID)) ? [`--bind-ro=${join(this.dir, 'product_uuid')}:${DMI_PRODUCT_UUID}`] : []),
      ...this.setup.nspawnArgs,
    ];
    let child: ChildProcess;
    try {
      child = spawn('/bin/sh', ['-c', CGROUP_WRAPPER, 'carlab-boot', 'systemd-nspawn', ...args], {
        detached: true,
        stdio: ['ignore', console.fd, console.fd],
        env: { ...process.env, CARLAB_CGROUP_PROCS: dirs.map((d) => join(d, 'cgroup.procs')).join(' ') },
      });
    } finally {
      await console.close();
    }
    child.unref();
    const pid = child.pid;
    if (pid === undefined) throw new Error(`cannot start systemd-nspawn for ${this.machine}`);
    const state: { exited?: { code: number | null; signal: NodeJS.Signals | null } } = {};
    child.on('error', () => undefined);
    child.once('exit', (code, signal) => {
      state.exited = { code, signal };
      this.onExit(child, code);
    });
    this.nspawn = child;
    this.nspawnStart = await processStartTime(pid);
    this.leader = undefined;
    await this.recordOwner();
    debug(`${this.machine}: nspawn ${pid} started`);

    const deadline = Date.now() + timeoutMs;
    let leader: number | undefined;
    const failure = (): string | undefined => {
      const e = state.exited;
      if (e) return `systemd-nspawn exited (code ${String(e.code)}, signal ${String(e.signal)})`;
      if (Date.now() <= deadline) return undefined;
      return leader === undefined ? `no container init after ${timeoutMs} ms` : `sshd did not answer on ${this.ip}:22 within ${timeoutMs} ms`;
    };
    const fail = async (why: string): Promise<never> => {
      const consoleTail = await this.consoleTail(40);
      if (!state.exited) await this.stop({ graceMs: 2_000 }).catch(() => undefined);
      throw new Error(`${this.machine} (${this.ip}) did not boot: ${why}\n--- console (${this.consoleLog}):\n${consoleTail}`);
    };
    while (leader === undefined) {
      const why = failure();
      if (why !== undefined) return fail(why);
      for (const c of await childrenOf(pid)) if (await isPidNamespaceInit(c)) leader = c;
      if (leader === undefined) await sleep(50);
    }
    this.leader = leader;
    debug(`${this.machine}: container init ${leader}`);
    for (;;) {
      const why = failure();
      if (why !== undefined) return fail(why);
      if (await probeTcp(this.ip, 22, 'SSH-', 2_000)) {
        debug(`${this.machine}: sshd answers`);
        return;
      }
      await sleep(100);
    }
  }

  private onExit(child: ChildProcess, code: number | null): void {
    if (this.nspawn !== child) return;
    this.nspawn = undefined;
    this.nspawnStart = undefined;
    this.leader = undefined;
    for (const w of this.exitWaiters.splice(0)) w();
    // Exit code 133: the container rebooted (systemctl reboot, Ansible's reboot module): boot it again.
    if (code === 133 && !this.stopping) {
      const waiters = this.restartWaiters.splice(0);
      this.setup.log(`${this.machine} rebooted; booting it again`);
      this.start().then(
        () => waiters.forEach((w) => w.resolve()),
        (err: unknown) => {
          this.setup.log(`${this.machine} failed to come back after a reboot: ${String(err)}`);
          waiters.forEach((w) => w.reject(err));
        },
      );
    } else {
      for (const w of this.restartWaiters.splice(0)) w.reject(new Error(`${this.machine} stopped (exit ${String(code)})`));
      void this.recordOwner().catch(() => undefined);
    }
  }

  /** Shuts the host down (SIGTERM to nspawn: a clean poweroff; SIGKILL after `graceMs`, default 20 s). */
  async stop(opts: { graceMs?: number } = {}): Promise<void> {
    const child = this.nspawn;
    this.stopping = true;
    try {
      const exited = new Promise<void>((resolve) => this.exitWaiters.push(resolve));
      await stopContainer(this.slot, child?.pid, this.nspawnStart, opts.graceMs ?? 20_000);
      if (child && this.nspawn === child) await Promise.race([exited, sleep(5_000)]);
      this.nspawn = undefined;
      this.leader = undefined;
      this.nspawnStart = undefined;
      await this.recordOwner();
    } finally {
      this.stopping = false;
    }
  }

  /** Reboots the host from inside (`systemctl reboot`) and waits until it is back with sshd answering. */
  async reboot(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (!this.nspawn) throw new Error(`${this.machine} is not running`);
    const back = new Promise<void>((resolve, reject) => this.restartWaiters.push({ resolve, reject }));
    await this.exec('systemctl reboot', { check: false, timeoutMs: 30_000 }).catch(() => undefined);
    const timeoutMs = opts.timeoutMs ?? this.setup.bootTimeoutMs + 60_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        back,
        new Promise<never>((_r, reject) => {
          timer = setTimeout(() => reject(new Error(`${this.machine} did not come back from a reboot within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Runs `command` with /bin/sh inside the host (all its namespaces, a clean environment, as root). */
  async exec(command: string, opts: ExecOptions = {}): Promise<ExecResult> {
    const leader = this.leader;
    if (!this.nspawn || leader === undefined) throw new Error(`${this.machine} is not running`);
    const r = await run(
      'nsenter',
      ['--target', String(leader), '--all', '--', '/usr/bin/env', '-i', `PATH=${CONTAINER_PATH}`, 'HOME=/root', 'LANG=C.UTF-8', 'TERM=dumb', '/bin/sh', '-c', command],
      { check: false, timeoutMs: opts.timeoutMs ?? 120_000, input: opts.input },
    );
    const result = { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode ?? 128 };
    if ((opts.check ?? true) && result.exitCode !== 0)
      throw new Error(`on ${this.machine}: \`${command}\` exited with ${result.exitCode}\n${tail(r.stderr, 20)}\n${tail(r.stdout, 10)}`);
    return result;
  }

  /**
   * Attaches a new sparse disk of `sizeBytes` (a loop device on the machine) as the next
   * /dev/vdX: at once in a running host (a device node), and on every later boot (nspawn --bind).
   */
  async addDisk(sizeBytes: number): Promise<LabDisk> {
    const letter = String.fromCharCode('b'.charCodeAt(0) + this.disks.length);
    const device = `/dev/vd${letter}`;
    await mkdir(join(this.dir, 'disks'), { recursive: true });
    const file = join(this.dir, 'disks', `vd${letter}.img`);
    await run('truncate', ['-s', String(sizeBytes), file]);
    const loop = (await run('losetup', ['--find', '--show', '--direct-io=on', file])).stdout.trim();
    const disk: LabDisk = { device, loop, file, sizeBytes };
    this.disks.push(disk);
    await this.recordOwner();
    const st = (await run('stat', ['-c', '%t %T', loop])).stdout.trim().split(' ');
    const [major, minor] = st.map((h) => String(parseInt(h, 16)));
    // A node of the host's own (what boots bind), not the machine's /dev/loopN: Ceph chowns its
    // devices, which would otherwise change the machine's node for good.
    await run('mknod', ['-m', '660', diskNode(disk), 'b', major ?? '', minor ?? '']);
    if (this.running) await this.exec(`mknod -m 660 ${device} b ${major ?? ''} ${minor ?? ''} && chgrp disk ${device}`);
    return disk;
  }

  /** The text of `path` inside the host (undefined when it does not exist): read from the root directory, or over SSH on a VM. */
  async readHostFile(path: string): Promise<string | undefined> {
    if (this.kind === 'vm') {
      const r = await this.exec(`cat ${shellQuote(path)}`, { check: false, timeoutMs: 30_000 });
      return r.exitCode === 0 ? r.stdout : undefined;
    }
    try {
      return await readFile(join(this.root, path), 'utf8');
    } catch {
      return undefined;
    }
  }

  /** The last lines of the host's console (boot messages), without colour codes. */
  async consoleTail(lines = 50): Promise<string> {
    try {
      // eslint-disable-next-line no-control-regex
      return tail((await readFile(this.consoleLog, 'utf8')).replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, ''), lines);
    } catch {
      return '(no console output)';
    }
  }

  /** @internal Stops the host and removes everything it used. */
  async teardown(graceMs: number): Promise<void> {
    await this.stop({ graceMs });
    await cleanupSlot(this.slot, await readOwner(this.slot), graceMs);
  }
}

/** The host's own device node of `disk` (in the host's directory), bound as /dev/vdX at boot. */
function diskNode(disk: LabDisk): string {
  return disk.file.replace(/\.img$/, '.dev');
}

/** Convenience: `host.addDisk(sizeBytes)`. */
export function addDisk(host: LabHost, sizeBytes: number): Promise<LabDisk> {
  return host.addDisk(sizeBytes);
}
