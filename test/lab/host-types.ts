/**
 * The types of lab hosts and of the options that describe them: seeds, host specs, kinds, VM
 * settings, key pairs, createLab's options, exec's options and results, disks; and (internal)
 * what a host is built from (HostSetup, VmSetup).
 */
import type { ImageOptions, LabImage } from './image.js';
import type { AccelChoice } from './vm.js';

/** A cloud-init NoCloud seed, written to `/var/lib/cloud/seed/nocloud/` before first boot. */
export interface CloudInitSeed {
  /** `user-data`, e.g. a `#cloud-config` document. */
  userData: string;
  /**
   * `meta-data`, as text or as flat keys. Default: `instance-id` (unique) and `local-hostname`
   * (the host's hostname); given keys override these.
   */
  metaData?: string | Record<string, string>;
  vendorData?: string;
  /** `network-config` (the image disables cloud-init networking unless this is given with a config of its own). */
  networkConfig?: string;
}

/** Per-host settings. */
export interface HostSpec {
  /** Default: the machine name `carlabN`, unique on this machine. */
  hostname?: string;
  /** Boot with cloud-init and this NoCloud seed instead of writing the SSH key for root. */
  seed?: CloudInitSeed;
  /** Sizes in bytes of extra disks, given to the host as /dev/vdb, /dev/vdc, … */
  disks?: readonly number[];
  /** A container (default, or `createLab({ vm: true })` for all hosts) or a virtual machine with its own kernel. */
  kind?: HostKind;
}

/** Lab hosts are systemd-nspawn containers on this machine's kernel, or QEMU virtual machines with a Debian kernel of their own. */
export type HostKind = 'container' | 'vm';

/** Settings of the VM hosts of a lab. */
export interface VmOptions {
  /** Guest memory in MiB (default 1536). */
  memoryMiB?: number;
  /** vCPUs (default 1: the machine's cores are shared with other tests). */
  cpus?: number;
  /** Bound on each VM's boot until sshd answers (default 600 s: sized for TCG). */
  bootTimeoutMs?: number;
  /** The VM image (default {@link VM_IMAGE}: the Ceph image with a kernel, LVM and cryptsetup). */
  image?: ImageOptions;
}

export interface KeyPair {
  privateKeyPath: string;
  publicKeyPath: string;
  /** The public key line. */
  publicKey: string;
}

export interface CreateLabOptions {
  /** Number of hosts, or one spec per host. */
  hosts: number | readonly HostSpec[];
  /** A label for logs and ownership records. */
  name?: string;
  /** Installed as root's authorized key on hosts without a seed. */
  sshPublicKey?: string;
  /** A key pair: its public key is installed like `sshPublicKey`, and `lab.ssh()` uses its private key. */
  sshKey?: KeyPair;
  /** Cloud-init seeds by host index (an array with holes, or a record). */
  seeds?: readonly (CloudInitSeed | undefined)[] | Readonly<Record<number, CloudInitSeed>>;
  /** The image to boot (default: the base image). */
  image?: ImageOptions;
  /** Make every host a virtual machine (`true`, or its settings); per host: `HostSpec.kind`. */
  vm?: boolean | VmOptions;
  /** How each host gets its root file system: an overlay on the image, a copy, or overlay falling back to a copy (default). */
  rootfs?: 'auto' | 'overlay' | 'copy';
  /** Bound on each host's boot until sshd answers (default 120 s). */
  bootTimeoutMs?: number;
  /**
   * DNS server for the hosts' /etc/resolv.conf, e.g. one a test runs on 10.77.0.1. Default:
   * none (lookups of names not in /etc/hosts fail at once).
   */
  nameserver?: string;
  /** Extra systemd-nspawn arguments for every host. */
  nspawnArgs?: readonly string[];
  /**
   * Keep the hosts when this process ends (for the CLI): sweepStale() leaves them alone and
   * only `sweepStale({ persistent: true })` or destroy() removes them.
   */
  persistent?: boolean;
  log?: (line: string) => void;
}

export interface ExecOptions {
  input?: string;
  /** Default 120 s. */
  timeoutMs?: number;
  /** Throw when the command exits non-zero (default true). */
  check?: boolean;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

export interface LabDisk {
  /** Device path inside the host. */
  device: string;
  /** Loop device on the machine. */
  loop: string;
  /** Backing file on the machine. */
  file: string;
  sizeBytes: number;
}

export interface HostSetup {
  kind: HostKind;
  slot: number;
  hostname: string;
  seed: CloudInitSeed | undefined;
  labName: string;
  persistent: boolean;
  image: LabImage;
  nspawnArgs: readonly string[];
  bootTimeoutMs: number;
  nameserver: string | undefined;
  log: (line: string) => void;
  /** VM hosts only. */
  vm?: VmSetup;
}

export interface VmSetup {
  accel: AccelChoice;
  memoryMiB: number;
  cpus: number;
  /** The lab's management key: `exec` logs in as root with it. */
  managementKey: KeyPair;
}
