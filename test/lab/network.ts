/** The lab network: the bridge carlab0, and each container slot's netns and veth pair on it; listing netns and links. */
import { readdir } from 'node:fs/promises';
import { GLOBAL_LOCK, GLOBAL_LOCK_TIMEOUT_MS, LAB_BRIDGE, LAB_GATEWAY, LAB_PREFIX_LENGTH, machineName, slotAddress, vethName } from './naming.js';
import { run, withFileLock } from './sys.js';

/**
 * Creates the lab bridge `carlab0` with 10.77.0.1/24 if needed (idempotent), under the lab's
 * machine-wide lock: two test files starting at once (the suite's two lanes) once raced here,
 * and the second `ip addr add` failed with "Address already assigned".
 */
export async function ensureBridge(): Promise<void> {
  await withFileLock(GLOBAL_LOCK, GLOBAL_LOCK_TIMEOUT_MS, 'lab bridge', ensureBridgeLocked);
}

/** {@link ensureBridge} for a caller that holds the lab's lock already. */
export async function ensureBridgeLocked(): Promise<void> {
  const show = await run('ip', ['-j', 'addr', 'show', 'dev', LAB_BRIDGE], { check: false });
  if (show.exitCode !== 0) {
    const add = await run('ip', ['link', 'add', LAB_BRIDGE, 'type', 'bridge'], { check: false });
    if (add.exitCode !== 0 && !add.stderr.includes('File exists')) throw new Error(`cannot create bridge ${LAB_BRIDGE}: ${add.stderr}`);
  }
  const info = JSON.parse((await run('ip', ['-j', 'addr', 'show', 'dev', LAB_BRIDGE])).stdout) as {
    addr_info?: { local?: string; prefixlen?: number }[];
  }[];
  const has = info[0]?.addr_info?.some((a) => a.local === LAB_GATEWAY && a.prefixlen === LAB_PREFIX_LENGTH) ?? false;
  if (!has) {
    const r = await run('ip', ['addr', 'add', `${LAB_GATEWAY}/${LAB_PREFIX_LENGTH}`, 'dev', LAB_BRIDGE], { check: false });
    if (r.exitCode !== 0 && !/exists|already assigned/.test(r.stderr)) throw new Error(`cannot address bridge ${LAB_BRIDGE}: ${r.stderr}`);
  }
  await run('ip', ['link', 'set', LAB_BRIDGE, 'up']);
}

export async function listNetns(): Promise<string[]> {
  try {
    return await readdir('/run/netns');
  } catch {
    return [];
  }
}

export async function listLinks(): Promise<string[]> {
  const r = await run('ip', ['-j', 'link', 'show'], { check: false });
  if (r.exitCode !== 0) return [];
  return (JSON.parse(r.stdout) as { ifname: string }[]).map((l) => l.ifname);
}

export async function setupNetwork(slot: number): Promise<void> {
  const ns = machineName(slot);
  const veth = vethName(slot);
  if ((await listNetns()).includes(ns)) await run('ip', ['netns', 'del', ns], { check: false });
  await run('ip', ['link', 'del', veth], { check: false });
  await run('ip', ['netns', 'add', ns]);
  await run('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
  await run('ip', ['link', 'set', veth, 'master', LAB_BRIDGE]);
  await run('ip', ['link', 'set', veth, 'up']);
  await run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  await run('ip', ['-n', ns, 'addr', 'add', `${slotAddress(slot)}/${LAB_PREFIX_LENGTH}`, 'dev', 'eth0']);
  await run('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
  await run('ip', ['-n', ns, 'route', 'add', 'default', 'via', LAB_GATEWAY]);
}
