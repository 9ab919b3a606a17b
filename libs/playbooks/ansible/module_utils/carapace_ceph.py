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

# Check mode (a preview, `ansible-playbook --check --diff`). A module calls check_mode(module)
# first; from then on the helpers below that change a host (write_file, ensure_dir,
# systemd_running, daemon_reload) only find out whether they would, record what they would do
# (would_change: one sentence each) and, in diff mode, a diff per file or directory, and
# change nothing. check_result() gives both to the module's result.
CHECK = {"on": False, "diff": False, "diffs": [], "would": []}

# The key of a module's result that says a check-mode run cannot know what a real run would
# do without changing something, and why (with changed: false). The runner's callback shows
# such a task as "unknown in check mode".
UNKNOWN = "check_mode_unknown"


def check_mode(module):
    """Switches the helpers to check mode when the module runs in it; returns whether it does."""
    CHECK["on"] = bool(getattr(module, "check_mode", False))
    CHECK["diff"] = bool(getattr(module, "_diff", False))
    del CHECK["diffs"][:]
    del CHECK["would"][:]
    return CHECK["on"]


def checking():
    """Whether the helpers run in check mode (see check_mode)."""
    return CHECK["on"]


def would(sentence):
    """Records a change a real run would make (check mode), e.g. "start ceph-mon@a.service"."""
    CHECK["would"].append(sentence)


def check_result(**result):
    """result with would_change (and, in diff mode, diff) of what the helpers recorded in
    check mode; result itself otherwise."""
    if CHECK["on"]:
        result.setdefault("would_change", list(CHECK["would"]))
        if CHECK["diff"] and CHECK["diffs"] and "diff" not in result:
            result["diff"] = list(CHECK["diffs"])
    return result


def _diff(path, before, after):
    if CHECK["on"] and CHECK["diff"]:
        CHECK["diffs"].append({"before": before, "after": after, "before_header": path, "after_header": path})


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


def _ids_or_none(name_user, name_group):
    """ids(), or (None, None) in check mode when the user or group does not exist yet (the
    Ceph packages a real run installs first make the ceph user)."""
    try:
        return ids(name_user, name_group)
    except KeyError:
        if CHECK["on"]:
            return None, None
        raise


def _owner_name(uid, gid):
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    try:
        group = grp.getgrgid(gid).gr_name
    except KeyError:
        group = str(gid)
    return "%s:%s" % (user, group)


def _own(path, st, mode, uid, gid, owner=None, group=None):
    """Sets the owner and mode of path (whose stat is st) where they differ; True if so. In
    check mode (uid None: the owner does not exist yet), only says whether it would."""
    if CHECK["on"]:
        now = {"path": path, "mode": "%04o" % (st.st_mode & 0o7777), "owner": _owner_name(st.st_uid, st.st_gid)}
        wanted = {"path": path, "mode": "%04o" % mode, "owner": "%s:%s" % (owner, group) if owner else _owner_name(uid, gid)}
        if uid is None or st.st_uid != uid or st.st_gid != gid or st.st_mode & 0o7777 != mode:
            would("set mode %s and owner %s of %s (now %s, %s)" % (wanted["mode"], wanted["owner"], path, now["mode"], now["owner"]))
            _diff(path, now, wanted)
            return True
        return False
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
    if CHECK["on"]:
        if not os.path.isdir(path):
            would("create directory %s (mode %04o, %s:%s)" % (path, mode, owner, group))
            _diff(path, {"path": path, "state": "absent"}, {"path": path, "state": "directory", "mode": "%04o" % mode, "owner": "%s:%s" % (owner, group)})
            return True
        uid, gid = _ids_or_none(owner, group)
        return _own(path, os.stat(path), mode, uid, gid, owner, group)
    changed = False
    if not os.path.isdir(path):
        os.makedirs(path, mode)
        changed = True
    uid, gid = ids(owner, group)
    return _own(path, os.stat(path), mode, uid, gid) or changed


def _shown(data, secret):
    """A file's content as a diff shows it: its text, or a placeholder for a secret or binary."""
    if data is None:
        return ""
    if secret:
        return "(a secret of %d bytes: not shown)\n" % len(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "(%d bytes of binary data)\n" % len(data)


def write_file(path, content, mode, owner="root", group="root", secret=False):
    """Writes content (str or bytes) atomically unless the file already holds it with that
    mode and owner; True when something changed. In check mode, only says whether it would
    (a diff of the content, never of a secret's: secret=True shows its size only)."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    uid, gid = _ids_or_none(owner, group)
    try:
        with open(path, "rb") as current:
            old = current.read()
        same = old == data
        st = os.stat(path)
    except FileNotFoundError:
        old, same, st = None, False, None
    if same:
        return _own(path, st, mode, uid, gid, owner, group)
    if CHECK["on"]:
        would("%s %s (mode %04o, %s:%s)" % ("create" if old is None else "rewrite", path, mode, owner, group))
        _diff(path, _shown(old, secret), _shown(data, secret))
        return True
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
            if CHECK["on"]:
                would("enable %s" % " ".join(todo))
            else:
                run(["systemctl", "enable"] + todo, timeout=timeout, check=True)
            changed = True
    rc, out, _ = run(["systemctl", "is-active"] + units, timeout=timeout)
    states = out.split()
    todo = [u for u, s in zip(units, states + [""] * len(units)) if s != "active"]
    if todo:
        if CHECK["on"]:
            would("start %s" % " ".join(todo))
        else:
            run(["systemctl", "start"] + todo, timeout=timeout, check=True)
        changed = True
    return changed


def daemon_reload(timeout=120):
    if CHECK["on"]:
        would("reload systemd's units (systemctl daemon-reload)")
        return
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
    directory under /var/lib/ceph/tmp that is removed afterwards. In check mode, only says it would."""
    if CHECK["on"]:
        would("make the store of mon.%s (ceph-mon --mkfs) in /var/lib/ceph/mon/ceph-%s" % (name, name))
        return
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
