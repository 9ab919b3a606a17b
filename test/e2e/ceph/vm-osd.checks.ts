// OSDs on a VM host of the lab (a kernel of its own: device-mapper, LVM, dm-crypt), read on
// the host itself and from outside it: what ceph-volume made (LVM, LUKS), where the dm-crypt
// key is (the monitors' config-key store) and where it must not be (anything the host wrote
// to its disks), and what a reboot brings back by itself.
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { LabHost } from '../../lab/lab.js';
import type { CephSystem, Json } from './system.js';

/** One OSD's data volume as `ceph-volume lvm list` reports it. */
export interface LvmOsd {
  id: number;
  osdFsid: string;
  lvPath: string;
  vg: string;
  /** The physical devices under the volume group (`/dev/vdb`). */
  devices: string[];
  encrypted: boolean;
}

/**
 * The host's `ceph-volume lvm` OSDs (their `block` volumes), read from the tags ceph-volume
 * puts on its logical volumes (`lvs`: what `ceph-volume lvm list` reads, without its Python
 * start-up, which costs seconds under TCG).
 */
export async function lvmOsds(host: LabHost): Promise<LvmOsd[]> {
  const { stdout } = await host.exec('lvs --reportformat json -o lv_path,vg_name,lv_tags,devices', { timeoutMs: 120_000 });
  const rows = ((JSON.parse(stdout) as Json).report?.[0]?.lv ?? []) as Json[];
  const byLv = new Map<string, LvmOsd>();
  for (const row of rows) {
    const tags = Object.fromEntries(
      String(row.lv_tags ?? '')
        .split(',')
        .filter((t) => t.includes('='))
        .map((t) => [t.slice(0, t.indexOf('=')), t.slice(t.indexOf('=') + 1)]),
    );
    if (tags['ceph.type'] !== 'block') continue;
    const lvPath = String(row.lv_path);
    const osd = byLv.get(lvPath) ?? {
      id: Number(tags['ceph.osd_id']),
      osdFsid: String(tags['ceph.osd_fsid'] ?? ''),
      lvPath,
      vg: String(row.vg_name),
      devices: [],
      encrypted: tags['ceph.encrypted'] === '1',
    };
    // `devices` is `/dev/vdb(0)`: one row per segment
    for (const d of String(row.devices ?? '').split(',')) {
      const device = d.replace(/\(\d+\)$/, '');
      if (device !== '' && !osd.devices.includes(device)) osd.devices.push(device);
    }
    byLv.set(lvPath, osd);
  }
  return [...byLv.values()].sort((a, b) => a.id - b.id);
}

/** The dm-crypt key the monitors keep for an encrypted OSD (`ceph-volume` stores it in config-key), or undefined. */
export async function dmcryptKey(mon: LabHost, osdFsid: string): Promise<string | undefined> {
  const r = await mon.exec(`timeout 60 ceph --connect-timeout 30 config-key get dm-crypt/osd/${osdFsid}/luks`, { check: false, timeoutMs: 90_000 });
  if (r.exitCode !== 0) return undefined;
  const value = r.stdout.trim();
  // Stored as the JSON `{"dmcrypt_key": "…"}` the OSD was created with, or as the bare key.
  try {
    const parsed = JSON.parse(value) as Json;
    if (typeof parsed.dmcrypt_key === 'string') return parsed.dmcrypt_key;
  } catch {
    // the bare key
  }
  return value === '' ? undefined : value;
}

/** The names of the host's device-mapper devices of the crypt target. */
export async function cryptMappings(host: LabHost): Promise<string[]> {
  const { stdout } = await host.exec('dmsetup table --target crypt', { check: false });
  return stdout
    .split('\n')
    .map((l) => /^(\S+):/.exec(l)?.[1])
    .filter((n): n is string => n !== undefined)
    .sort();
}

/**
 * How many times `needle` occurs in a file of this machine (a VM's qcow2 overlay or raw disk),
 * read as bytes in chunks of 16 MiB (each chunk overlapping the last by the needle's length, so
 * that a needle across two chunks is found). Not grep: a disk image's runs of zeros or
 * ciphertext hold no newline, and grep kept such a "line" of 7 GiB in memory.
 */
export async function occurrencesInFile(file: string, needle: string): Promise<number> {
  const wanted = Buffer.from(needle);
  let count = 0;
  let carry = Buffer.alloc(0);
  for await (const chunk of createReadStream(file, { highWaterMark: 16 * 1024 * 1024 }) as AsyncIterable<Buffer>) {
    const window = carry.length === 0 ? chunk : Buffer.concat([carry, chunk]);
    for (let at = window.indexOf(wanted); at !== -1; at = window.indexOf(wanted, at + wanted.length)) count++;
    // the tail that may hold the start of a needle completed by the next chunk (never a whole one)
    carry = Buffer.from(window.subarray(Math.max(0, window.length - (wanted.length - 1))));
  }
  return count;
}

/**
 * The dm-crypt key of each encrypted OSD is nowhere in clear on what the VM host wrote: its
 * page cache flushed (`sync`), then its root disk's overlay and every data disk's file are
 * searched from outside the VM for the key, in the key's own encoding.
 */
export async function expectKeyNotOnDisks(host: LabHost, keys: readonly string[]): Promise<void> {
  await host.exec('sync');
  const files = [host.root, ...host.disks.map((d) => d.file)];
  for (const key of keys) {
    expect(key.length, 'a dm-crypt key').toBeGreaterThan(20);
    expect(await occurrencesInFileHolding(key), 'the search finds the key where it is: across a chunk border').toBe(2);
    for (const file of files) expect(await occurrencesInFile(file, key), `the dm-crypt key in clear in ${file}`).toBe(0);
  }
}

/** Whether each OSD is up and in, by id. */
export async function upAndIn(sys: CephSystem, mon: LabHost, ids: readonly number[]): Promise<boolean> {
  const dump = await sys.ceph<Json>(mon, 'osd dump');
  return ids.every((id) => {
    const o = (dump.osds as Json[]).find((x) => x.osd === id);
    return o?.up === 1 && o?.in === 1;
  });
}

/** The OSD activation units (`ceph-volume@lvm-ID-FSID`) enabled on the host: each would try to start its OSD at boot. */
export async function enabledActivationUnits(host: LabHost): Promise<string[]> {
  const { stdout } = await host.exec('ls /etc/systemd/system/multi-user.target.wants/', { check: false });
  return stdout
    .split('\n')
    .filter((n) => n.startsWith('ceph-volume@'))
    .sort();
}

/** occurrencesInFile over a file of 17 MiB holding `needle` once across its first chunk border and once at its end. */
async function occurrencesInFileHolding(needle: string): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'carapace-search-'));
  try {
    const bytes = Buffer.alloc(17 * 1024 * 1024);
    bytes.write(needle, 16 * 1024 * 1024 - 5);
    bytes.write(needle, bytes.length - needle.length);
    await writeFile(join(dir, 'probe'), bytes);
    return await occurrencesInFile(join(dir, 'probe'), needle);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
