# Carapace: what the Ceph modules of library/ share (shipped to the hosts with each module).
#
# Python 3 standard library only: the hosts need nothing but python3. Every helper takes
# argv lists (never a shell) and bounds what it runs with a timeout.
"""Shared helpers of the Carapace Ceph modules."""

import grp
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time

CEPH_USER = "ceph"


class CommandError(Exception):
    """A command that could not run or exited non-zero, with its output for the message."""

    def __init__(self, argv, rc, stdout, stderr):
        self.argv = argv
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        super().__init__("%s exited with %s: %s" % (" ".join(argv), rc, tail(stderr or stdout)))


def tail(text, lines=15):
    """The last lines of a command's output, for a message."""
    return "\n".join((text or "").strip().splitlines()[-lines:])


def run(argv, timeout=120, check=False):
    """(rc, stdout, stderr) of argv; rc 127 when it is missing, 124 when it timed out."""
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, check=False)
        rc, out, err = done.returncode, done.stdout, done.stderr
    except FileNotFoundError as exc:
        rc, out, err = 127, "", str(exc)
    except subprocess.TimeoutExpired as exc:
        rc, out, err = 124, _text(exc.stdout), _text(exc.stderr) + "\n(timed out after %s s)" % timeout
    if check and rc != 0:
        raise CommandError(argv, rc, out, err)
    return rc, out, err


def _text(value):
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def start_all(argvs, timeout):
    """Runs several commands at once; returns [(argv, rc, stdout, stderr)] in the given order."""
    procs = []
    for argv in argvs:
        try:
            procs.append((argv, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        except FileNotFoundError as exc:
            procs.append((argv, exc))
    deadline = time.monotonic() + timeout
    results = []
    for argv, proc in procs:
        if isinstance(proc, Exception):
            results.append((argv, 127, "", str(proc)))
            continue
        try:
            out, err = proc.communicate(timeout=max(1, deadline - time.monotonic()))
            results.append((argv, proc.returncode, out, err))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            results.append((argv, 124, out, err + "\n(timed out after %s s)" % timeout))
    return results


def ceph(args, timeout=30, check=True):
    """Runs the ceph CLI with the host's admin keyring, bounded."""
    argv = ["timeout", str(timeout), "ceph", "--connect-timeout", str(max(1, timeout - 5))] + list(args)
    return run(argv, timeout=timeout + 5, check=check)


def ids(name_user, name_group):
    return pwd.getpwnam(name_user).pw_uid, grp.getgrnam(name_group).gr_gid


def _own(path, st, mode, uid, gid):
    """Sets the owner and mode of path (whose stat is st) where they differ; True if so."""
    changed = False
    if st.st_uid != uid or st.st_gid != gid:
        os.chown(path, uid, gid)
        changed = True
    if st.st_mode & 0o7777 != mode:
        os.chmod(path, mode)
        changed = True
    return changed


def ensure_dir(path, mode, owner="root", group="root"):
    """Creates path (and its parents) with mode/owner; True when something changed."""
    changed = False
    if not os.path.isdir(path):
        os.makedirs(path, mode)
        changed = True
    uid, gid = ids(owner, group)
    return _own(path, os.stat(path), mode, uid, gid) or changed


def write_file(path, content, mode, owner="root", group="root"):
    """Writes content (str or bytes) atomically unless the file already holds it with that
    mode and owner; True when something changed."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    uid, gid = ids(owner, group)
    try:
        with open(path, "rb") as current:
            same = current.read() == data
        st = os.stat(path)
    except FileNotFoundError:
        same, st = False, None
    if same:
        return _own(path, st, mode, uid, gid)
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".carapace-", dir=directory)
    try:
        os.fchmod(fd, mode)
        os.fchown(fd, uid, gid)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return True


def read_text(path):
    """The file's text, or None when it does not exist."""
    try:
        with open(path, "r", encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def systemd_running(units, enable=True, timeout=120):
    """Makes units enabled (when asked) and active, each with one systemctl call for all of
    them; True when one had to be enabled or started."""
    units = list(units)
    if not units:
        return False
    changed = False
    if enable:
        rc, out, _ = run(["systemctl", "is-enabled"] + units, timeout=timeout)
        states = out.split()
        todo = [u for u, s in zip(units, states + [""] * len(units)) if s not in ("enabled", "static", "enabled-runtime", "alias", "indirect")]
        if todo:
            run(["systemctl", "enable"] + todo, timeout=timeout, check=True)
            changed = True
    rc, out, _ = run(["systemctl", "is-active"] + units, timeout=timeout)
    states = out.split()
    todo = [u for u, s in zip(units, states + [""] * len(units)) if s != "active"]
    if todo:
        run(["systemctl", "start"] + todo, timeout=timeout, check=True)
        changed = True
    return changed


def daemon_reload(timeout=120):
    run(["systemctl", "daemon-reload"], timeout=timeout, check=True)


def osd_activation_units(osd_ids):
    """The OSD activation units (ceph-volume@lvm-ID-FSID, ceph-volume@raw-...) of these OSDs
    that systemd knows or that are enabled: they start an OSD at boot."""
    ids = set(str(i) for i in osd_ids)
    rc, out, _ = run(["systemctl", "list-units", "--all", "--plain", "--no-legend", "ceph-volume@*"], timeout=60)
    units = set(line.split()[0] for line in out.splitlines() if line.strip())
    wants = "/etc/systemd/system/multi-user.target.wants"
    if os.path.isdir(wants):
        units.update(n for n in os.listdir(wants) if n.startswith("ceph-volume@"))
    found = []
    for unit in sorted(units):
        match = re.match(r"^ceph-volume@(?:lvm|raw)-(\d+)-.*\.service$", unit)
        if match and match.group(1) in ids:
            found.append(unit)
    return found


def osd_device_mapper_chain(osd_id):
    """The device-mapper devices under OSD OSD_ID's `block` on this host, top first, by their
    dm names: [the dm-crypt mapping, the logical volume] for an encrypted ceph-volume lvm OSD,
    [the logical volume] for a plain one, [] for a raw OSD on a whole disk or when the OSD's
    directory holds no `block` (not activated). Read from sysfs, so it works when the disk
    under them failed and LVM can no longer read its metadata."""
    link = "/var/lib/ceph/osd/ceph-%s/block" % osd_id
    if not os.path.islink(link):
        return []
    dev = os.path.basename(os.path.realpath(link))
    names = []
    while dev.startswith("dm-") and os.path.isdir("/sys/block/%s/dm" % dev):
        with open("/sys/block/%s/dm/name" % dev) as f:
            names.append(f.read().strip())
        slaves = os.listdir("/sys/block/%s/slaves" % dev)
        if len(slaves) != 1:
            break
        dev = slaves[0]
    return names


def remove_device_mapper_chain(names, timeout=60):
    """Removes device-mapper devices top first (`dmsetup remove --retry`: for a dm-crypt
    mapping the same as `cryptsetup close`, for a logical volume the same as deactivating it).
    Returns the names removed and, for those that could not be (still open), why."""
    removed, problems = [], []
    for name in names:
        if not os.path.exists("/dev/mapper/%s" % name):
            continue
        rc, out, err = run(["dmsetup", "remove", "--retry", name], timeout=timeout)
        if rc == 0:
            removed.append(name)
        else:
            problems.append("%s: %s" % (name, tail(err or out)))
            break
    return removed, problems


def make_mon_store(name, fsid, mon_keyring, monmap, timeout=300):
    """Makes the store of monitor NAME in /var/lib/ceph/mon/ceph-NAME (owned by ceph) with
    ceph-mon --mkfs from the mon. keyring and a monitor map (bytes), both written to a private
    directory under /var/lib/ceph/tmp that is removed afterwards."""
    ensure_dir("/var/lib/ceph/tmp", 0o755, "ceph", "ceph")
    ensure_dir("/var/lib/ceph/mon/ceph-%s" % name, 0o750, "ceph", "ceph")
    work = tempfile.mkdtemp(prefix="carapace-mon-", dir="/var/lib/ceph/tmp")
    try:
        uid, gid = ids("ceph", "ceph")
        os.chown(work, uid, gid)
        keyring = os.path.join(work, "keyring")
        monmap_path = os.path.join(work, "monmap")
        write_file(keyring, mon_keyring, 0o600, "ceph", "ceph")
        write_file(monmap_path, monmap, 0o600, "ceph", "ceph")
        run(["ceph-mon", "--cluster", "ceph", "--setuser", "ceph", "--setgroup", "ceph", "--mkfs", "-i", name,
             "--fsid", fsid, "--monmap", monmap_path, "--keyring", keyring], timeout=timeout, check=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
