// OSDs on a VM host of the lab (a kernel of its own: device-mapper, LVM, dm-crypt), read on
// the host itself and from outside it: what ceph-volume made (LVM, LUKS), where the dm-crypt
// key is (the monitors' config-key store) and where it must not be (anything the host wrote
// to its disks), and what a reboot brings back by itself.
import { createReadStream } from 'node:fs';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { LabHost } from '../../lab/lab.js';
import { run } from '../../lab/sys.js';
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
 * The byte ranges of `file` that hold data, [start, end) each (`SEEK_DATA` and `SEEK_HOLE`,
 * through Python's os.lseek: Node has no lseek): a disk image of 8 GiB is mostly holes, which
 * read as zeros and hold nothing to find. The whole file where the file system cannot say.
 */
async function dataRanges(file: string): Promise<[number, number][]> {
  const script = [
    'import os, sys',
    'fd = os.open(sys.argv[1], os.O_RDONLY); size = os.fstat(fd).st_size; at = 0',
    'while at < size:',
    '    try: start = os.lseek(fd, at, os.SEEK_DATA)',
    '    except OSError: break',
    '    end = os.lseek(fd, start, os.SEEK_HOLE); print(start, end); at = end',
  ].join('\n');
  const r = await run('python3', ['-c', script, file], { check: false });
  if (r.exitCode !== 0) return [[0, Number.MAX_SAFE_INTEGER]];
  return r.stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => l.split(' ').map(Number) as [number, number]);
}

/**
 * How many times `needle` occurs in a file of this machine (a VM's qcow2 overlay or raw disk),
 * read as bytes, only where the file holds data (`dataRanges`), in chunks of 16 MiB (each
 * chunk overlapping the last by the needle's length, so that a needle across two chunks is
 * found; a needle holds no zero byte, so none lies across a hole). Not grep: a disk image's
 * runs of zeros or ciphertext hold no newline, and grep kept such a "line" of 7 GiB in memory.
 */
export async function occurrencesInFile(file: string, needle: string): Promise<number> {
  const wanted = Buffer.from(needle);
  if (wanted.includes(0)) throw new Error('occurrencesInFile: the needle holds a zero byte, which a hole would hide');
  let count = 0;
  for (const [start, end] of await dataRanges(file)) {
    let carry = Buffer.alloc(0);
    const stream = createReadStream(file, { start, end: end - 1, highWaterMark: 16 * 1024 * 1024 }) as AsyncIterable<Buffer>;
    for await (const chunk of stream) {
      const window = carry.length === 0 ? chunk : Buffer.concat([carry, chunk]);
      for (let at = window.indexOf(wanted); at !== -1; at = window.indexOf(wanted, at + wanted.length)) count++;
      // the tail that may hold the start of a needle completed by the next chunk (never a whole one)
      carry = Buffer.from(window.subarray(Math.max(0, window.length - (wanted.length - 1))));
    }
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
    expect(await occurrencesInFileHolding(key), 'the search finds the key where it is: across a chunk border, after a hole, at the end').toBe(3);
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

/**
 * occurrencesInFile over a sparse file of 48 MiB holding `needle` three times: across the
 * first chunk border, after a hole of 23 MiB, and at its end.
 */
async function occurrencesInFileHolding(needle: string): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'carapace-search-'));
  const MiB = 1024 * 1024;
  try {
    const file = join(dir, 'probe');
    const bytes = Buffer.alloc(17 * MiB, 0x61);
    bytes.write(needle, 16 * MiB - 5);
    await writeFile(file, bytes);
    const handle = await open(file, 'r+');
    try {
      await handle.write(Buffer.from(needle), 0, needle.length, 40 * MiB);
      await handle.write(Buffer.from(needle), 0, needle.length, 48 * MiB - needle.length);
    } finally {
      await handle.close();
    }
    return await occurrencesInFile(file, needle);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
