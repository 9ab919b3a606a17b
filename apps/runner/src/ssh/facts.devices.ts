/**
 * The block device nodes of the host's own `/dev` (the `dev-nodes` section of the facts
 * script): what tells the devices a host can use from the machine's, and their names there.
 * A container (a lab host, any nspawn/LXC host) shares the kernel's sysfs, so lsblk lists
 * every device of the machine; only those with a node in the host's `/dev` are the host's,
 * possibly under another name (a loop device bound as `/dev/vdb`).
 */
import { FactsParseError } from './facts.errors.js';

/** One block device node of the host's `/dev`. */
export interface DevNode {
  /** `MAJ:MIN` in decimal, as lsblk prints it. */
  readonly majMin: string;
  /** `/dev/vdb` */
  readonly path: string;
  /** `vdb` */
  readonly name: string;
  /**
   * What `blkid -p` found on the node (`TYPE`, `PTTYPE`, ...), empty when udev's database
   * describes the device (lsblk's signatures stand); null when blkid could not read it.
   */
  readonly signatures: ReadonlyMap<string, string> | null;
}

const NODE = /^@node ([0-9a-f]+):([0-9a-f]+) (\/dev\/\S+)$/;
const PROBE = /^@probe (ok|failed|udev)$/;
const EXPORT = /^([A-Z_]+)=(.*)$/;

/** Parses the `dev-nodes` section into the host's block device nodes, in `/dev` order. */
export function parseDevNodes(output: string): DevNode[] {
  const nodes: DevNode[] = [];
  let current: { majMin: string; path: string; values: Map<string, string> } | null = null;
  for (const raw of output.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    const node = NODE.exec(line);
    if (node?.[1] && node[2] && node[3]) {
      if (current) throw new FactsParseError(`dev-nodes: ${current.path} has no probe result`);
      current = { majMin: `${parseInt(node[1], 16)}:${parseInt(node[2], 16)}`, path: node[3], values: new Map() };
      continue;
    }
    const probe = PROBE.exec(line);
    if (probe && current) {
      nodes.push({
        majMin: current.majMin,
        path: current.path,
        name: current.path.slice('/dev/'.length),
        signatures: probe[1] === 'failed' ? null : current.values,
      });
      current = null;
      continue;
    }
    const value = EXPORT.exec(line);
    // Anything else (a message of blkid or sudo) says nothing about the node.
    if (value?.[1] && value[2] !== undefined && current) current.values.set(value[1], value[2]);
  }
  if (current) throw new FactsParseError(`dev-nodes: ${current.path} has no probe result`);
  return nodes;
}

/**
 * The node that names a device of the kernel (`majMin`, kernel name `kname`) on the host:
 * the one with the kernel's name when it exists (an ordinary host), else the first other
 * one (a device bound from outside under a name of the host's); null when the host has none.
 */
export function hostNodeOf(nodes: readonly DevNode[], majMin: string, kname: string): DevNode | null {
  const matching = nodes.filter((n) => n.majMin === majMin);
  return matching.find((n) => n.name === kname) ?? matching[0] ?? null;
}
