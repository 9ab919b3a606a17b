// LVM and encrypted OSDs for real, on a VM lab host (a QEMU guest with its own Debian kernel:
// device-mapper, dm-crypt, LVM; test/lab/README.md), end to end through the public API. Three
// container hosts with one disk each make the cluster; the VM host, with one disk, first shows
// what the lab made of it (its own kernel, cloud-init's NoCloud first boot, device-mapper), then:
// - add_osd of a plain `ceph-volume lvm` OSD (the path real clusters use), then remove_osd:
//   safe-to-destroy asked, its volume group and LVM label gone;
// - add_osd with dmcrypt: LUKS on the OSD's volume, its key in the monitors' config-key store
//   and nowhere in clear in any file the VM wrote (searched from outside the VM);
// - a real reboot of the guest: the OSD comes back up and in by itself, unlocked, no execution;
// - its disk fails: replace_osd is refused without dmcrypt (the data would be in clear), then
//   with it the same id is encrypted again on a new disk with a new key, the failed disk's
//   dm-crypt mapping and logical volume closed;
// - remove_osd: safe-to-destroy asked, the LUKS volume, its mapping and its key gone;
// - the lab destroyed: no QEMU process, tap device or file left.
// The lab's VM host is proven here, on the one guest this file boots (a boot costs 2 to 3
// minutes under TCG), not by a file of its own.
// Where no VM can start (not root, no QEMU), every test says so in its name.
import { release } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostDeviceMapperStatus } from '../lab/ceph.js';
import { labResidue, VmHost, type LabHost } from '../lab/lab.js';
import { listProcesses, processAlive, run } from '../lab/sys.js';
import { checkVmRequirements, tapName } from '../lab/vm.js';
import { deployAndCheck, waitHealthy, type DeployedCluster } from './ceph/deploy.checks.js';
import { expectEncryptedOsds } from './ceph/dmcrypt.checks.js';
import { addOsdAndCheck, removeOsdAndCheck } from './ceph/osd.checks.js';
import { CephSystem, DISK_BYTES, logSteps, why, type Json } from './ceph/system.js';
import { cryptMappings, dmcryptKey, enabledActivationUnits, expectKeyNotOnDisks, lvmOsds, upAndIn, type LvmOsd } from './ceph/vm-osd.checks.js';
import { eventually } from '@carapace/test-support/eventually';

/** Three container hosts with one disk each make the cluster; the VM host comes after them. */
const DEPLOYED = 3;
/** VM hosts need root, QEMU and tap devices (test/lab/README.md, VM hosts): where they cannot start, the tests say so. */
const VM_MISSING = await checkVmRequirements();
const VM = VM_MISSING.length === 0;
const NO_VM = `skipped: no VM host can start on this machine (missing: ${VM_MISSING.join('; ')}; see test/lab/README.md)`;

function log(line: string): void {
  process.stderr.write(`[ceph-vm.e2e] ${line}\n`);
}

describe('LVM and encrypted OSDs on a VM host with its own kernel, through the API', { timeout: 20 * 60_000 }, () => {
  let sys: CephSystem;
  let deployed: DeployedCluster;

  beforeAll(async () => {
    // The VM host boots (1.5 to 3 minutes under TCG) while the containers do.
    sys = await CephSystem.start({ name: 'e2e-ceph-vm', hosts: DEPLOYED, disks: 1, vms: VM ? { count: 1, disks: 1 } : undefined });
  }, 40 * 60_000);

  afterAll(async () => {
    await sys?.stop();
  }, 180_000);

  it.runIf(VM)(`deploys 3 container hosts x 1 disk: monitors in quorum, every OSD up and in, healthy${VM ? '' : ` (${NO_VM})`}`, async () => {
    deployed = await deployAndCheck(
      sys,
      sys.servers.slice(0, DEPLOYED).map((s) => s.id as string),
      1,
    );
  });

  const vmId = (): string => sys.servers[DEPLOYED]?.id as string;
  const vm = (): LabHost => sys.host(vmId());
  const mon = (): LabHost => sys.host(deployed.monIds[0] as string);

  it.runIf(VM)(`the VM host boots its own Debian kernel in QEMU on the lab bridge, ran cloud-init's NoCloud first boot, has device-mapper with dm-crypt${VM ? '' : ` (${NO_VM})`}`, async () => {
    const h = sys.lab.hosts[DEPLOYED];
    if (!(h instanceof VmHost)) throw new Error(`${h?.machine ?? 'the last host'} is not a VM host`);
    expect(h.ip).toMatch(/^10\.77\.0\.\d+$/);
    const uname = (await h.exec('uname -r')).stdout.trim();
    expect(uname).toMatch(/-amd64$/);
    expect(uname, 'a kernel of its own, not the machine\'s').not.toBe(release());
    expect((await h.exec('systemd-detect-virt', { check: false })).stdout.trim()).toBe(h.accel.accel === 'kvm' ? 'kvm' : 'qemu');
    expect((await h.exec('ip -4 -o addr show dev eth0')).stdout).toContain(`${h.ip}/24`);
    expect((await h.exec('hostname')).stdout.trim()).toBe(h.name);
    const state = await h.exec('systemctl is-system-running --wait', { check: false, timeoutMs: 300_000 });
    const failed = (await h.exec('systemctl --failed --no-legend --plain', { check: false })).stdout;
    expect(state.stdout.trim(), `failed units:\n${failed}`).toBe('running');
    // the same NoCloud user-data as the containers, from the CIDATA disk: it registered the host (discovery), as cloud-init reports
    const ci = await h.exec('cloud-init status --wait --long', { check: false, timeoutMs: 300_000 });
    expect(ci.exitCode, `cloud-init status:\n${ci.stdout}${ci.stderr}`).toBe(0);
    expect(ci.stdout).toMatch(/^status: done$/m);
    expect(ci.stdout).toMatch(/NoCloud/);
    expect((await sys.server(vmId())).data.state).toBe('operational');
    const dm = await hostDeviceMapperStatus(h);
    expect(dm.available, dm.reason).toBe(true);
    expect(dm.osdMode).toBe('lvm');
    // the crypt target is a module, loaded on first use (cryptsetup loads it the same way)
    expect((await h.exec('modprobe dm_crypt && dmsetup targets')).stdout).toMatch(/^crypt\s/m);
  });
  /** Seconds of add_osd of the plain LVM OSD, logged beside the encrypted one's. */
  let lvmSeconds = 0;
  let encrypted: LvmOsd | undefined;
  let encryptedKey = '';

  it.runIf(VM)(`adds an LVM OSD on a VM host (its own kernel: ceph-volume lvm, not encrypted), up and in${VM ? '' : ` (${NO_VM})`}`, async () => {
    expect(vm().kind).toBe('vm');
    // No second run here: the rerun of add_osd is proven on the containers; a run costs minutes under TCG.
    const added = await addOsdAndCheck(sys, deployed, [vmId()], 1, { rerun: false });
    lvmSeconds = added.run.seconds;
    log(`add_osd, one LVM OSD on the VM host: ${added.run.seconds.toFixed(1)} s`);
    logSteps(added.run, log);
    const osds = await lvmOsds(vm());
    expect(osds.map((o) => ({ id: o.id, encrypted: o.encrypted, devices: o.devices }))).toEqual([
      { id: added.osds.get(vmId())?.[0], encrypted: false, devices: ['/dev/vdb'] },
    ]);
    expect((await vm().exec(`cryptsetup isLuks ${osds[0]?.lvPath}`, { check: false })).exitCode).not.toBe(0);
    expect(await cryptMappings(vm())).toEqual([]);
  });

  it.runIf(VM)(`removes the LVM OSD: safe-to-destroy asked, its volume group and LVM label gone${VM ? '' : ` (${NO_VM})`}`, async () => {
    const removed = await removeOsdAndCheck(sys, deployed, [vmId()], { rerun: false });
    log(`remove_osd, the LVM OSD: ${removed.run.seconds.toFixed(1)} s`);
    logSteps(removed.run, log);
    expect(removed.run.steps.some((s: Json) => s.data.name === 'Wait until Ceph says the OSDs are safe to destroy' && s.data.result === 'ok'), why(removed.run)).toBe(true);
    expect(await lvmOsds(vm())).toEqual([]);
    expect((await vm().exec('vgs --noheadings -o vg_name')).stdout.trim()).toBe('');
    expect((await vm().exec('pvs --noheadings -o pv_name')).stdout.trim()).toBe('');
    // nothing left to start it at boot (remove_osd disables ceph-volume's activation unit)
    expect(await enabledActivationUnits(vm())).toEqual([]);
  });

  it.runIf(VM)(`adds an encrypted OSD on the VM host (dmcrypt): LUKS on its data volume, the key in the monitors and nowhere on the host in clear${VM ? '' : ` (${NO_VM})`}`, async () => {
    const added = await addOsdAndCheck(sys, deployed, [vmId()], 1, { hints: [{ id: 'dmcrypt', value: true }], rerun: false });
    log(`add_osd, one encrypted OSD on the VM host: ${added.run.seconds.toFixed(1)} s (LVM without encryption: ${lvmSeconds.toFixed(1)} s)`);
    logSteps(added.run, log);
    await expectEncryptedOsds(sys, [vmId()], 1);
    const [osd] = await lvmOsds(vm());
    expect(osd?.encrypted).toBe(true);
    expect(osd?.devices).toEqual(['/dev/vdb']);
    encrypted = osd;
    expect(await cryptMappings(vm())).toHaveLength(1);
    encryptedKey = (await dmcryptKey(mon(), osd?.osdFsid ?? '')) ?? '';
    expect(encryptedKey, `config-key dm-crypt/osd/${osd?.osdFsid}/luks`).not.toBe('');
    expect(added.run.log).not.toContain(encryptedKey);
    await expectKeyNotOnDisks(vm(), [encryptedKey]);
  });

  it.runIf(VM)(`reboots the VM host for real: the encrypted OSD comes back up and in by itself, unlocked, with no execution${VM ? '' : ` (${NO_VM})`}`, async () => {
    const host = vm();
    const id = encrypted?.id as number;
    const executions = (await sys.api.ok('GET', '/v1/execution/?per_page=1')).total as number;
    const bootId = (await host.exec('cat /proc/sys/kernel/random/boot_id')).stdout.trim();
    const pid = host.pid;
    const started = Date.now();
    await host.reboot();
    // a new kernel boot in the same QEMU process (the guest rebooted; the lab did not restart it), at the same address
    expect((await host.exec('cat /proc/sys/kernel/random/boot_id')).stdout.trim()).not.toBe(bootId);
    expect(host.pid).toBe(pid);
    expect((await host.exec('ip -4 -o addr show dev eth0')).stdout).toContain(`${host.ip}/24`);
    await eventually(`osd.${id} up and in after the reboot`, async () => ((await upAndIn(sys, mon(), [id])) ? true : undefined), 600_000);
    log(`reboot: osd.${id} up again ${((Date.now() - started) / 1000).toFixed(1)} s after the reboot began`);
    expect(await cryptMappings(host)).toHaveLength(1);
    expect((await host.exec(`systemctl is-active ceph-osd@${id}`)).stdout.trim()).toBe('active');
    expect((await sys.api.ok('GET', '/v1/execution/?per_page=1')).total).toBe(executions);
    await waitHealthy(sys, deployed.monIds[0] as string, 'healthy after the reboot', 300_000);
  });

  it.runIf(VM)(`replace_osd after the encrypted OSD's disk failed: refused without dmcrypt; with it, the same id encrypted again on a new disk, a new key, the old disk's mapping closed, never more OSDs${VM ? '' : ` (${NO_VM})`}`, async () => {
    const host = vm();
    const id = encrypted?.id as number;
    const count = (await sys.ceph<number[]>(mon(), 'osd ls')).length;
    // the disk fails: its OSD stops, its start (LVM label and metadata) is overwritten
    await host.exec(`systemctl stop ceph-osd@${id} && dd if=/dev/urandom of=/dev/vdb bs=1M count=8 conv=fsync status=none`);
    await eventually(`osd.${id} down`, async () => ((await sys.ceph<Json>(mon(), 'osd dump')).osds.find((o: Json) => o.osd === id)?.up === 0 ? true : undefined), 120_000);
    const disk = await host.addDisk(DISK_BYTES);
    // without dmcrypt, refused before anything changes: the replacement would hold the data in clear
    const clear = await sys.run('replace_osd', deployed.clusterId, [vmId()], [{ id: 'replacements', value: `${id}:${disk.device}` }]);
    expect(clear.execution.data.state, why(clear)).toBe('failed');
    expect(clear.log).toContain(`osd.${id} is encrypted (the monitors hold its dm-crypt key): give dmcrypt: true`);
    const still = (await sys.ceph<Json>(mon(), 'osd dump')).osds.find((o: Json) => o.osd === id);
    expect({ in: still?.in, destroyed: String(still?.state).includes('destroyed') }).toEqual({ in: 1, destroyed: false });
    expect((await host.exec(`blkid -p ${disk.device}`, { check: false })).exitCode, 'the new disk untouched').toBe(2);
    const run = await sys.run('replace_osd', deployed.clusterId, [vmId()], [
      { id: 'replacements', value: `${id}:${disk.device}` },
      { id: 'dmcrypt', value: true },
    ]);
    expect(run.execution.data.state, why(run)).toBe('completed');
    log(`replace_osd of an encrypted OSD on the VM host: ${run.seconds.toFixed(1)} s`);
    logSteps(run, log);
    // the failed disk's dm-crypt mapping and logical volume were closed, not left open on it
    expect(run.steps.some((s: Json) => String(s.data.name).startsWith(`osd.${id}: the old disk's device-mapper devices closed: `)), why(run)).toBe(true);
    await eventually(`osd.${id} up and in after the replacement`, async () => ((await upAndIn(sys, mon(), [id])) ? true : undefined), 300_000);
    const osds = await lvmOsds(host);
    expect(osds.map((o) => ({ id: o.id, encrypted: o.encrypted, devices: o.devices }))).toEqual([{ id, encrypted: true, devices: [disk.device] }]);
    const key = (await dmcryptKey(mon(), osds[0]?.osdFsid ?? '')) ?? '';
    expect(key).not.toBe('');
    expect(key).not.toBe(encryptedKey);
    expect(await dmcryptKey(mon(), encrypted?.osdFsid ?? ''), 'the failed OSD\'s key').toBeUndefined();
    expect(run.log).not.toContain(key);
    expect((await sys.ceph<number[]>(mon(), 'osd ls')).length).toBe(count);
    expect(await cryptMappings(host), 'only the new OSD\'s dm-crypt mapping').toHaveLength(1);
    expect(await enabledActivationUnits(host)).toEqual([`ceph-volume@lvm-${id}-${osds[0]?.osdFsid}.service`]);
    await expectKeyNotOnDisks(host, [key]);
    encrypted = osds[0];
    encryptedKey = key;
    await waitHealthy(sys, deployed.monIds[0] as string, 'healthy after the replacement', 300_000);
  });

  it.runIf(VM)(`removes the encrypted OSD: safe-to-destroy asked, the LUKS volume, its mapping and its key gone${VM ? '' : ` (${NO_VM})`}`, async () => {
    const removed = await removeOsdAndCheck(sys, deployed, [vmId()], { rerun: false });
    log(`remove_osd, the encrypted OSD: ${removed.run.seconds.toFixed(1)} s`);
    logSteps(removed.run, log);
    expect(removed.run.steps.some((s: Json) => s.data.name === 'Wait until Ceph says the OSDs are safe to destroy' && s.data.result === 'ok'), why(removed.run)).toBe(true);
    expect(await lvmOsds(vm())).toEqual([]);
    expect(await cryptMappings(vm())).toEqual([]);
    expect((await vm().exec('vgs --noheadings -o vg_name')).stdout.trim()).toBe('');
    expect(await dmcryptKey(mon(), encrypted?.osdFsid ?? ''), 'the removed OSD\'s key').toBeUndefined();
    expect(await enabledActivationUnits(vm())).toEqual([]);
  });

  it.runIf(VM)(`destroying the lab leaves no QEMU process, tap device or file of the VM host${VM ? '' : ` (${NO_VM})`}`, async () => {
    const h = vm();
    const machine = h.machine;
    const pid = h.pid ?? 0;
    const tap = tapName(h.slot);
    expect(await processAlive(pid)).toBe(true);
    await sys.lab.destroy();
    expect(await labResidue([machine])).toEqual([]);
    expect(await processAlive(pid)).toBe(false);
    expect((await listProcesses()).filter((p) => p.argv.includes('-name') && p.argv.some((a) => a.startsWith(`${machine},`)))).toEqual([]);
    expect((await run('ip', ['-o', 'link', 'show'])).stdout).not.toContain(`${tap}:`);
  });
});
