/**
 * The VM image's own recipe: what a root file system needs to boot as a virtual machine with
 * its own Debian kernel (fstab, networkd, the identity unit that reads the lab's seed disk),
 * and the bootable files made from it (kernel, initramfs, a raw ext4 disk made with
 * `mkfs.ext4 -d`, no loop mount). Used by image.ts when an image has `vm: true`.
 */
import { copyFile, mkdir, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from './sys.js';

/** Bump when {@link customizeVmRoot} or {@link makeVmDisk} changes: VM images are rebuilt. */
export const VM_RECIPE_VERSION = 1;

/** Size of the VM's root file system (a sparse raw file; hosts write to qcow2 overlays of it). */
export const VM_ROOT_DISK_BYTES = 12 * 1024 ** 3;

/** Filesystem label of the per-host seed disk: cloud-init's NoCloud label, also read by the identity unit. */
export const SEED_LABEL = 'CIDATA';

/** Where, on the seed disk, the lab puts the host's identity files (beside cloud-init's files). */
export const SEED_IDENTITY_DIR = 'carapace-lab';

/** The file a VM's root accepts for root logins besides /root/.ssh/authorized_keys: the lab's management key. */
export const VM_MANAGEMENT_KEYS = '/etc/ssh/carapace-lab/root_authorized_keys';

/** Files the VM image adds to the root file system (paths relative to it). */
export interface VmBootFiles {
  kernel: string;
  initrd: string;
  disk: string;
  diskBytes: number;
  kernelRelease: string;
}

/**
 * Runs at every boot before networkd, sshd and cloud-init: reads `carapace-lab/` on the seed
 * disk (label CIDATA) and installs the host's network (a .network file matched by MAC, in /run)
 * and the lab's management key; at first boot also its hostname, /etc/hosts, resolv.conf and
 * root's authorized key (seedless hosts), and SSH host keys if there are none.
 */
const IDENTITY_SCRIPT = `#!/bin/sh
# carapace lab: this VM's identity and network, from its seed disk (see test/lab/vm-image.ts)
set -eu
dev=/dev/disk/by-label/${SEED_LABEL}
mnt=/run/carapace-lab/seed
mkdir -p "$mnt"
mount -t vfat -o ro "$dev" "$mnt"
trap 'umount "$mnt" 2>/dev/null || true' EXIT
id="$mnt/${SEED_IDENTITY_DIR}"
mkdir -p /run/systemd/network
install -m 0644 "$id/lab.net" /run/systemd/network/10-carapace-lab.network
install -d -m 0755 /etc/ssh/carapace-lab
install -m 0600 "$id/mgmt.pub" ${VM_MANAGEMENT_KEYS}
if [ ! -e /var/lib/carapace-lab/identity-done ]; then
  install -m 0644 "$id/hostname" /etc/hostname
  install -m 0644 "$id/hosts" /etc/hosts
  rm -f /etc/resolv.conf
  install -m 0644 "$id/resolv" /etc/resolv.conf
  if [ -e "$id/root.pub" ]; then
    install -d -m 0700 /root/.ssh
    install -m 0600 "$id/root.pub" /root/.ssh/authorized_keys
  fi
  mkdir -p /var/lib/carapace-lab
  touch /var/lib/carapace-lab/identity-done
fi
hostname -F /etc/hostname
for t in ed25519 ecdsa; do
  [ -s /etc/ssh/ssh_host_\${t}_key ] || ssh-keygen -q -t "$t" -N '' -C "root@$(hostname)" -f /etc/ssh/ssh_host_\${t}_key
done
`;

const IDENTITY_UNIT = `[Unit]
Description=Carapace lab: identity and network of this VM from its seed disk
DefaultDependencies=no
Requires=dev-disk-by\\x2dlabel-${SEED_LABEL}.device
After=dev-disk-by\\x2dlabel-${SEED_LABEL}.device local-fs.target systemd-remount-fs.service
Before=sysinit.target cloud-init-local.service network-pre.target systemd-networkd.service ssh.service
Wants=network-pre.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/carapace-lab-identity

[Install]
WantedBy=sysinit.target
`;

/** Units a VM host must not run (the container image masks gettys etc. already). */
const VM_MASKED_UNITS = ['systemd-firstboot.service'];

/**
 * First boot (an empty /etc/machine-id) makes systemd apply presets: keep the units the
 * container images disable disabled here too.
 */
const VM_PRESET = [
  '# carapace lab: units the lab images keep disabled',
  'disable ceph-crash.service',
  'disable smartmontools.service',
  'disable nvmf-autoconnect.service',
  'disable nvmefc-boot-connections.service',
  '',
].join('\n');

/** Makes a root file system (with the kernel installed) boot as a lab VM. */
export async function customizeVmRoot(rootfs: string): Promise<void> {
  const etc = join(rootfs, 'etc');
  await writeFile(join(etc, 'fstab'), '# carapace lab VM\n/dev/vda / ext4 errors=remount-ro 0 1\n');
  await writeFile(join(rootfs, 'usr/local/sbin/carapace-lab-identity'), IDENTITY_SCRIPT, { mode: 0o755 });
  await writeFile(join(etc, 'systemd/system/carapace-lab-identity.service'), IDENTITY_UNIT);
  const wants = join(etc, 'systemd/system/sysinit.target.wants');
  await mkdir(wants, { recursive: true });
  await rm(join(wants, 'carapace-lab-identity.service'), { force: true });
  await symlink('/etc/systemd/system/carapace-lab-identity.service', join(wants, 'carapace-lab-identity.service'));
  // systemd-networkd configures the NIC from the .network file the identity unit writes.
  const multiUser = join(etc, 'systemd/system/multi-user.target.wants');
  await mkdir(multiUser, { recursive: true });
  await rm(join(multiUser, 'systemd-networkd.service'), { force: true });
  await symlink('/lib/systemd/system/systemd-networkd.service', join(multiUser, 'systemd-networkd.service'));
  const sockets = join(etc, 'systemd/system/sockets.target.wants');
  await mkdir(sockets, { recursive: true });
  await rm(join(sockets, 'systemd-networkd.socket'), { force: true });
  await symlink('/lib/systemd/system/systemd-networkd.socket', join(sockets, 'systemd-networkd.socket'));
  for (const unit of VM_MASKED_UNITS) {
    const p = join(etc, 'systemd/system', unit);
    await rm(p, { force: true });
    await symlink('/dev/null', p);
  }
  await mkdir(join(etc, 'systemd/system-preset'), { recursive: true });
  await writeFile(join(etc, 'systemd/system-preset/10-carapace-lab.preset'), VM_PRESET);
  // Root logs in with the lab's management key too (the host's `exec`), whatever the seed says.
  await writeFile(
    join(etc, 'ssh/sshd_config.d/91-carapace-lab-vm.conf'),
    ['# carapace lab VM: the lab reaches root with its management key (host.exec)', 'Match User root', `  AuthorizedKeysFile .ssh/authorized_keys ${VM_MANAGEMENT_KEYS}`, ''].join('\n'),
  );
}

/**
 * Copies the kernel and initramfs out of `rootfs` and makes `dir/disk.raw`, a sparse ext4 file
 * system of {@link VM_ROOT_DISK_BYTES} holding `rootfs` (`mkfs.ext4 -d`).
 */
export async function makeVmDisk(rootfs: string, dir: string, finalDir: string): Promise<VmBootFiles> {
  const boot = await readdir(join(rootfs, 'boot'));
  const kernels = boot.filter((f) => f.startsWith('vmlinuz-')).sort();
  const kernelFile = kernels[kernels.length - 1];
  if (kernelFile === undefined) throw new Error(`no kernel in ${rootfs}/boot (is linux-image-amd64 installed?)`);
  const kernelRelease = kernelFile.slice('vmlinuz-'.length);
  const initrdFile = `initrd.img-${kernelRelease}`;
  if (!boot.includes(initrdFile)) throw new Error(`no ${initrdFile} in ${rootfs}/boot (initramfs-tools did not run?)`);
  await copyFile(join(rootfs, 'boot', kernelFile), join(dir, 'vmlinuz'));
  await copyFile(join(rootfs, 'boot', initrdFile), join(dir, 'initrd.img'));
  const disk = join(dir, 'disk.raw');
  await rm(disk, { force: true });
  await run('mkfs.ext4', ['-q', '-F', '-L', 'carlab-root', '-E', 'root_owner=0:0', '-d', rootfs, disk, `${Math.floor(VM_ROOT_DISK_BYTES / 1024)}k`], {
    timeoutMs: 20 * 60_000,
  });
  return {
    kernel: join(finalDir, 'vmlinuz'),
    initrd: join(finalDir, 'initrd.img'),
    disk: join(finalDir, 'disk.raw'),
    diskBytes: VM_ROOT_DISK_BYTES,
    kernelRelease,
  };
}
