/**
 * Ceph in the lab: the Ceph-ready host image (Debian 12's own Ceph 16 packages installed,
 * nothing configured or running) and device-mapper detection (whether `ceph-volume lvm` and
 * dm-crypt can run, or only `ceph-volume raw`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { ensureImage, type ImageOptions, type LabImage } from './image.js';
import { run } from './sys.js';

/** Packages of the `ceph` image. ceph-volume is part of ceph-osd in Debian 12, which also pulls lvm2; ceph-base pulls cryptsetup-bin. */
export const CEPH_PACKAGES: readonly string[] = ['ceph-common', 'ceph-mgr', 'ceph-mon', 'ceph-osd', 'udev'];

/**
 * Units the packages enable that would run something on a host with no cluster, or fail in a
 * container: ceph-crash (a daemon polling /var/lib/ceph/crash), smartd (smartmontools, pulled
 * by ceph-osd) and nvme-cli's NVMe-oF boot units (nvmf-autoconnect fails in a container) are
 * disabled. The ceph*.target units stay enabled: they start nothing until a daemon instance
 * (ceph-mon@HOST, ceph-osd@ID…) is enabled. policy-rc.d keeps postinst from starting anything
 * during the build, and there is no ceph.conf.
 */
const CEPH_UNITS_OFF = [
  'systemctl disable ceph-crash.service smartmontools.service nvmf-autoconnect.service nvmefc-boot-connections.service',
  'test ! -e /etc/ceph/ceph.conf',
].join('\n');

/** The Ceph packages an upgrade installs: those of the image that hold daemons or the CLI. */
export const CEPH_UPGRADE_PACKAGES: readonly string[] = ['ceph-common', 'ceph-mgr', 'ceph-mon', 'ceph-osd'];

/** Where the image keeps the second Ceph release, an apt repository (see {@link REEF_REPOSITORY_SCRIPT}). */
export const REEF_REPOSITORY = {
  /** The repository's root in every host of the image: `deb file:/srv/carapace-lab/reef reef main`. */
  dir: '/srv/carapace-lab/reef',
  url: 'file:/srv/carapace-lab/reef',
  suite: 'reef',
  components: 'main',
  /** The ASCII-armored key its Release is signed with (generated at build, its secret half discarded). */
  keyFile: '/srv/carapace-lab/reef.asc',
  /** The release the image's Debian 12 hosts run before an upgrade: Debian 12's own Ceph. */
  from: '16.2',
  to: '18.2',
} as const;

/**
 * The second release for upgrade tests, without a mirror during the tests: Debian 13's Ceph 18
 * (Reef) packages and everything they need on these Debian 12 hosts, resolved by apt against
 * the image's installed Ceph 16 (`-t trixie`, download only: nothing is installed), kept in
 * the image as an apt repository signed with a key made for it. Debian 13's archive is on the
 * machine's own mirror (the suite `trixie` beside the image's `bookworm`); its source is
 * removed again, so hosts know only the repository. About 90 packages, 100 MB: Reef drags in
 * Debian 13's libc6, libstdc++6, Python 3.13, OpenSSL (the 64-bit time_t libraries) and the
 * packages that depend on those (openssh, curl), as a real partial upgrade would.
 */
export const REEF_REPOSITORY_SCRIPT = `set -eu
repo=${REEF_REPOSITORY.dir}
mirror=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list)
test -n "$mirror"
apt-get update -q
apt-get install -y -q --no-install-recommends apt-utils gnupg
echo "deb $mirror trixie main" > /etc/apt/sources.list.d/carapace-lab-trixie.list
apt-get update -q
mkdir -p "$repo/pool/partial"
apt-get install -y -q --download-only --no-install-recommends -t trixie -o Dir::Cache::archives="$repo/pool" ${CEPH_UPGRADE_PACKAGES.join(' ')}
rm -rf "$repo/pool/partial" "$repo/pool/lock" /etc/apt/sources.list.d/carapace-lab-trixie.list /var/lib/apt/lists/*
ls "$repo/pool" | grep -q '^ceph-osd_18\\.2\\.'
cd "$repo"
mkdir -p dists/reef/main/binary-amd64
apt-ftparchive packages pool > dists/reef/main/binary-amd64/Packages
gzip -9kn dists/reef/main/binary-amd64/Packages
apt-ftparchive -o APT::FTPArchive::Release::Origin=carapace-lab -o APT::FTPArchive::Release::Label=carapace-lab \
  -o APT::FTPArchive::Release::Suite=reef -o APT::FTPArchive::Release::Codename=reef \
  -o APT::FTPArchive::Release::Components=main -o APT::FTPArchive::Release::Architectures=amd64 release dists/reef > /root/Release
mv /root/Release dists/reef/Release
export GNUPGHOME=$(mktemp -d /root/gnupg.XXXXXX)
gpg --batch -q --passphrase '' --quick-gen-key 'Carapace lab Ceph 18 repository <lab@carapace.invalid>' ed25519 sign never
gpg --batch -q --armor --export > ${REEF_REPOSITORY.keyFile}
gpg --batch -q --yes --clearsign -o dists/reef/InRelease dists/reef/Release
gpg --batch -q --yes --armor --detach-sign -o dists/reef/Release.gpg dists/reef/Release
gpgconf --kill all
rm -rf "$GNUPGHOME"`;

/** Shell commands of the ceph image after its packages: units off, then the Reef repository. */
export const CEPH_POST_INSTALL = `${CEPH_UNITS_OFF}\n${REEF_REPOSITORY_SCRIPT}`;

/** `ensureImage` options of the Ceph-ready image. */
export const CEPH_IMAGE: ImageOptions = { name: 'ceph', extraPackages: CEPH_PACKAGES, postInstall: CEPH_POST_INSTALL };

/** Builds (once, cached) and returns the Ceph-ready image: base image plus {@link CEPH_PACKAGES}. */
export function ensureCephImage(opts: Pick<ImageOptions, 'timeoutMs' | 'log' | 'mirror'> = {}): Promise<LabImage> {
  return ensureImage({ ...CEPH_IMAGE, ...opts });
}

/** What the kernel offers for device-mapper, and so which ceph-volume mode can run. */
export interface DeviceMapperStatus {
  /** `ceph-volume lvm` and `--dmcrypt` can run (device-mapper in the kernel and its control node usable). */
  available: boolean;
  /** `ceph-volume raw` without encryption when not available; `lvm` (and dm-crypt) when it is. */
  osdMode: 'lvm' | 'raw';
  /** `device-mapper` is listed in /proc/misc (the control device's driver). */
  inProcMisc: boolean;
  /** `device-mapper` is a block driver in /proc/devices. */
  inProcDevices: boolean;
  /** /dev/mapper/control exists. */
  controlNode: boolean;
  /** `dmsetup version` answered with a driver version (undefined when not tried: no dmsetup). */
  dmsetupDriver?: string;
  /** Why, in one line. */
  reason: string;
}

/**
 * The shell check, runnable on the machine or inside a host: prints `key=value` lines that
 * {@link parseDeviceMapperProbe} reads. Needs only sh, grep and (if installed) dmsetup.
 */
export const DEVICE_MAPPER_PROBE = [
  'if grep -qw device-mapper /proc/misc 2>/dev/null; then echo misc=1; else echo misc=0; fi',
  'if grep -qw device-mapper /proc/devices 2>/dev/null; then echo devices=1; else echo devices=0; fi',
  'if [ -c /dev/mapper/control ]; then echo control=1; else echo control=0; fi',
  'if command -v dmsetup >/dev/null 2>&1; then echo "dmsetup=$(dmsetup version 2>&1 | grep -i "^driver version" | sed "s/.*:[[:space:]]*//")"; fi',
].join('\n');

/** Reads the output of {@link DEVICE_MAPPER_PROBE}. */
export function parseDeviceMapperProbe(output: string): DeviceMapperStatus {
  const kv = new Map<string, string>();
  for (const line of output.split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) kv.set(line.slice(0, i).trim(), line.slice(i + 1).trim());
  }
  const inProcMisc = kv.get('misc') === '1';
  const inProcDevices = kv.get('devices') === '1';
  const controlNode = kv.get('control') === '1';
  const dmsetupDriver = kv.has('dmsetup') ? kv.get('dmsetup') ?? '' : undefined;
  const kernel = inProcMisc || inProcDevices;
  const dmsetupOk = dmsetupDriver === undefined || dmsetupDriver !== '';
  const available = kernel && controlNode && dmsetupOk;
  let reason: string;
  if (!kernel) reason = 'the kernel has no device-mapper (not in /proc/misc nor /proc/devices)';
  else if (!controlNode) reason = 'device-mapper is in the kernel but /dev/mapper/control is missing';
  else if (!dmsetupOk) reason = '`dmsetup version` reports no kernel driver';
  else reason = `device-mapper present${dmsetupDriver ? ` (driver ${dmsetupDriver})` : ''}`;
  return {
    available,
    osdMode: available ? 'lvm' : 'raw',
    inProcMisc,
    inProcDevices,
    controlNode,
    ...(dmsetupDriver !== undefined ? { dmsetupDriver } : {}),
    reason,
  };
}

/** Device-mapper on this machine (where the lab's hosts share the kernel). */
export async function deviceMapperStatus(): Promise<DeviceMapperStatus> {
  const r = await run('/bin/sh', ['-c', DEVICE_MAPPER_PROBE], { check: false });
  return parseDeviceMapperProbe(r.stdout);
}

/** Whether `ceph-volume lvm` and dm-crypt can run on this machine's kernel (synchronous, no dmsetup). */
export function deviceMapperAvailable(): boolean {
  const has = (f: string) => {
    try {
      return /\bdevice-mapper\b/.test(readFileSync(f, 'utf8'));
    } catch {
      return false;
    }
  };
  return (has('/proc/misc') || has('/proc/devices')) && existsSync('/dev/mapper/control');
}

/** Device-mapper as seen inside a host (anything with an `exec` running as root there). */
export async function hostDeviceMapperStatus(host: { exec(cmd: string, opts?: { check?: boolean }): Promise<{ stdout: string }> }): Promise<DeviceMapperStatus> {
  const r = await host.exec(DEVICE_MAPPER_PROBE, { check: false });
  return parseDeviceMapperProbe(r.stdout);
}

/**
 * A shell script that makes a one-monitor cluster by hand on a host of the ceph image (the
 * manual-deployment path the playbooks follow): a generated fsid, `ceph.conf`, the mon., admin
 * and bootstrap-osd keyrings, `monmaptool` and `ceph-mon --mkfs`, then `ceph-mon@HOST` and
 * `ceph-mgr@HOST` started by their units. Prints the fsid. Pool size 1: a one-host lab.
 */
export function oneMonBootstrapScript(host: { name: string; ip: string }, publicNetwork = '10.77.0.0/24'): string {
  const h = host.name;
  return `set -eu
fsid=$(cat /proc/sys/kernel/random/uuid)
cat > /etc/ceph/ceph.conf <<CONF
[global]
fsid = $fsid
mon initial members = ${h}
mon host = ${host.ip}
public network = ${publicNetwork}
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
osd pool default size = 1
osd pool default min size = 1
osd crush chooseleaf type = 0
mon allow pool size one = true
CONF
ceph-authtool --create-keyring /tmp/ceph.mon.keyring --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-authtool --create-keyring /etc/ceph/ceph.client.admin.keyring --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
ceph-authtool --create-keyring /var/lib/ceph/bootstrap-osd/ceph.keyring --gen-key -n client.bootstrap-osd --cap mon 'profile bootstrap-osd' --cap mgr 'allow r' >/dev/null
ceph-authtool /tmp/ceph.mon.keyring --import-keyring /etc/ceph/ceph.client.admin.keyring >/dev/null
ceph-authtool /tmp/ceph.mon.keyring --import-keyring /var/lib/ceph/bootstrap-osd/ceph.keyring >/dev/null
chown ceph:ceph /tmp/ceph.mon.keyring /var/lib/ceph/bootstrap-osd/ceph.keyring
monmaptool --create --addv ${h} '[v2:${host.ip}:3300,v1:${host.ip}:6789]' --fsid "$fsid" /tmp/monmap >/dev/null
install -d -o ceph -g ceph /var/lib/ceph/mon/ceph-${h}
runuser -u ceph -- ceph-mon --mkfs -i ${h} --monmap /tmp/monmap --keyring /tmp/ceph.mon.keyring
rm -f /tmp/ceph.mon.keyring /tmp/monmap
systemctl enable --now ceph-mon@${h} >/dev/null 2>&1
install -d -o ceph -g ceph /var/lib/ceph/mgr/ceph-${h}
timeout 60 ceph auth get-or-create mgr.${h} mon 'allow profile mgr' osd 'allow *' mds 'allow *' > /var/lib/ceph/mgr/ceph-${h}/keyring
chown ceph:ceph /var/lib/ceph/mgr/ceph-${h}/keyring
systemctl enable --now ceph-mgr@${h} >/dev/null 2>&1
echo "$fsid"
`;
}
