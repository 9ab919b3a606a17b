# Carapace: what the day-2 modules (upgrade, rolling restart) share: the cluster asked through
# the ceph CLI in JSON, Ceph's versions and releases, the gates (ok-to-stop) and the per-host
# noout flags Carapace sets, each marked in the monitors' config-key store so that a later
# run can tell them from an operator's.
#
# Python 3 standard library only. Every call is bounded.
"""Shared helpers of the Carapace day-2 Ceph modules."""

import json
import re
import time

from ansible.module_utils.carapace_ceph import ceph, checking, tail, would

# Ceph's major versions and their release names (ceph osd require-osd-release takes the name).
RELEASES = {
    12: "luminous",
    13: "mimic",
    14: "nautilus",
    15: "octopus",
    16: "pacific",
    17: "quincy",
    18: "reef",
    19: "squid",
    20: "tentacle",
}

# Where Carapace marks a flag it set: config-key carapace/noout/<host bucket> = "<when> <why>".
NOOUT_MARK = "carapace/noout/"

# What the cluster runs with while OSDs of a host are down or restarting under Carapace's noout
# (a rolling restart, an upgrade, a host in maintenance), from the first such host until none
# is left: options set in the monitors' central configuration, each (who, name, value), which
# the monitors hand to every connected client at once. When an OSD comes back, the PGs it
# leads change primary again, and the acting primary of the meantime may drop an operation
# it holds for them; the client resends it only once it has an OSD map that says so, and a
# client waiting on that one operation is sent none: it asks for a map itself when it finds
# the operation late, after objecter_timeout (10 s) at its check every objecter_tick_interval
# (5 s), so 10 to 15 s after it began, past a 10 s bound. With these, 3 to 4 s. Measured in
# the lab: docs/day2/upgrade-and-restart.md, "Clients while OSDs restart". An option an
# operator set (an entry of `ceph config dump` that Carapace did not mark) is left as it is
# and never removed: setting them is how an operator keeps Carapace from changing them.
HELD_OPTIONS = (
    ("client", "objecter_timeout", "3"),
    ("client", "objecter_tick_interval", "1"),
)
# Where Carapace marks an option it set: config-key carapace/config/<who>/<name> = "<when> <why>".
CONFIG_MARK = "carapace/config/"


def step(name, started=None, result="ok", changed=False):
    """A step for the runner's callback (carapace_steps of a module's result): started is when
    its work began (default: now), it ends now."""
    now = time.time()
    return {"name": name, "result": result, "changed": changed, "time_started": now if started is None else started, "time_finished": now}


class Refused(Exception):
    """Ceph (or a check on what it says) refuses the next step: the message says why."""


def upstream(version):
    """The upstream version of a Debian package version or a `ceph --version` line:
    '2:18.2.7+ds-1+deb13u1' and 'ceph version 18.2.7 (abc) reef (stable)' give '18.2.7'."""
    text = str(version or "")
    match = re.search(r"(?:^|[\s:])(\d+\.\d+\.\d+)", text)
    return match.group(1) if match else ""


def version_key(version):
    """A sortable tuple of an upstream version ('18.2.7' -> (18, 2, 7)); () when there is none."""
    found = upstream(version)
    return tuple(int(part) for part in found.split(".")) if found else ()


def major(version):
    key = version_key(version)
    return key[0] if key else 0


def release_name(version):
    return RELEASES.get(major(version), "")


# The commands a module may send through one librados connection instead of one `ceph`
# process each (about half a second of the CLI's start and connection on a small host): their
# words, whether the manager answers them, and the names of their arguments, as Ceph's
# command descriptions give them. Anything else goes through the CLI.
_LIBRADOS_COMMANDS = {
    ("mgr", "dump"): ("mon", []),
    ("mon", "metadata"): ("mon", []),
    ("mgr", "metadata"): ("mon", []),
    ("osd", "metadata"): ("mon", []),
    ("osd", "dump"): ("mon", []),
    ("osd", "tree"): ("mon", []),
    ("quorum_status",): ("mon", []),
    ("pg", "stat"): ("mgr", []),
    ("osd", "ls-tree"): ("mon", ["name"]),
    ("mon", "ok-to-stop"): ("mon", ["ids*"]),
    ("osd", "ok-to-stop"): ("mgr", ["ids*"]),
    ("osd", "safe-to-destroy"): ("mgr", ["ids*"]),
    ("osd", "down"): ("mon", ["ids*"]),
    ("osd", "out"): ("mon", ["ids*"]),
    ("osd", "in"): ("mon", ["ids*"]),
    ("mgr", "fail"): ("mon", ["who"]),
    ("config-key", "dump"): ("mon", ["key"]),
    ("config-key", "exists"): ("mon", ["key"]),
    ("config-key", "set"): ("mon", ["key", "val"]),
    ("config-key", "rm"): ("mon", ["key"]),
    ("osd", "set-group"): ("mon", ["flags", "who*"]),
    ("osd", "unset-group"): ("mon", ["flags", "who*"]),
    # the pools (carapace_ceph_pool)
    ("osd", "pool", "ls"): ("mon", ["detail"]),
    ("osd", "crush", "rule", "dump"): ("mon", []),
    ("osd", "crush", "rule", "create-replicated"): ("mon", ["name", "root", "type"]),
    ("osd", "crush", "rule", "rm"): ("mon", ["name"]),
    ("osd", "erasure-code-profile", "get"): ("mon", ["name"]),
    ("osd", "erasure-code-profile", "set"): ("mon", ["name", "profile*"]),
    ("osd", "erasure-code-profile", "rm"): ("mon", ["name"]),
    ("osd", "pool", "set-quota"): ("mon", ["pool", "field", "val"]),
    ("osd", "pool", "set"): ("mon", ["pool", "var", "val"]),
    ("osd", "pool", "application", "enable"): ("mon", ["pool", "app"]),
    ("pg", "ls-by-pool"): ("mgr", ["poolstr"]),
    ("df",): ("mon", ["detail"]),
    ("fs", "ls"): ("mon", []),
    ("mon", "dump"): ("mon", []),
    ("auth", "ls"): ("mon", []),
    ("config", "show"): ("mgr", ["who"]),
    ("config", "dump"): ("mon", []),
    ("config", "set"): ("mon", ["who", "name", "value"]),
    ("config", "rm"): ("mon", ["who", "name"]),
}

_SESSION = {"cluster": None, "timeout": 10}


def use_librados(timeout=30):
    """From now on, the commands of _LIBRADOS_COMMANDS go through one librados connection
    (python3-rados, which the ceph CLI itself uses) as client.admin; the CLI stays for the
    rest, and for everything when the connection cannot be made. Returns whether it was."""
    try:
        import rados  # pylint: disable=import-outside-toplevel
        cluster = rados.Rados(conffile="/etc/ceph/ceph.conf", rados_id="admin")
        cluster.conf_set("client_mount_timeout", str(max(5, timeout - 5)))
        cluster.connect(timeout=max(5, timeout - 5))
    except Exception:  # pylint: disable=broad-except
        return False
    _SESSION["cluster"] = cluster
    _SESSION["timeout"] = max(5, timeout - 5)
    return True


def librados_session():
    """The librados connection of use_librados() (a rados.Rados), or None when there is none."""
    return _SESSION["cluster"]


def _librados_command(args, as_json):
    """(rc, stdout text, stderr text) of args through the librados session, or None when it is
    not one of _LIBRADOS_COMMANDS (or Ceph does not take it so: the CLI then asks)."""
    cluster = _SESSION["cluster"]
    if cluster is None:
        return None
    args = [str(a) for a in args]
    for words, (target, names) in _LIBRADOS_COMMANDS.items():
        if tuple(args[:len(words)]) != words:
            continue
        rest = args[len(words):]
        cmd = {"prefix": " ".join(words)}
        for name in names:
            if name.endswith("*"):
                cmd[name[:-1]] = rest
                rest = []
            elif rest:
                cmd[name.rstrip("#")] = int(rest[0]) if name.endswith("#") else rest[0]
                rest = rest[1:]
        if rest:
            return None
        if as_json:
            cmd["format"] = "json"
        try:
            call = cluster.mgr_command if target == "mgr" else cluster.mon_command
            ret, out, outs = call(json.dumps(cmd), b"", timeout=_SESSION["timeout"])
        except Exception as err:  # pylint: disable=broad-except
            return (110, "", "librados: %s" % err)
        if ret == -22 and "invalid command" in (outs or "").lower():
            return None
        text = out.decode("utf-8", "replace") if isinstance(out, bytes) else str(out or "")
        return (-ret if ret < 0 else ret, text, outs or "")
    return None


def ceph_json(args, timeout=30):
    """(rc, parsed JSON or None, stderr) of `ceph ARGS -f json`. The CLI prints the JSON also
    when the command fails (ok-to-stop says why in it), after a blank line."""
    done = _librados_command(args, True)
    rc, out, err = done if done is not None else ceph(list(args) + ["-f", "json"], timeout=timeout, check=False)
    text = (out or "").strip()
    try:
        data = json.loads(text) if text else None
    except ValueError:
        data = None
    return rc, data, (err or "").strip()


def ceph_required(args, timeout=30):
    """The parsed JSON answer of a command that must succeed; raises Refused with Ceph's words."""
    rc, data, err = ceph_json(args, timeout)
    if rc != 0 or data is None:
        raise Refused("ceph %s failed (exit %s): %s" % (" ".join(args), rc, tail(err) or "no answer"))
    return data


def ceph_command(args, timeout=30):
    """(rc, stderr) of a command whose answer is text on stderr (`mon ok-to-stop`, `osd set-group`)."""
    done = _librados_command(args, False)
    rc, out, err = done if done is not None else ceph(list(args), timeout=timeout, check=False)
    return rc, ((err or "") + "\n" + (out or "")).strip()


def daemon_metadata(timeout=30, kinds=("mon", "mgr", "osd")):
    """What the daemons of kinds last reported of themselves: {"mon": {name: {"version",
    "host"}}, "mgr": {...}, "osd": {id: {...}}} from their metadata (also for daemons that are
    down now: `ceph versions` counts only those up). host is the short host name."""
    found = dict((kind, {}) for kind in kinds)
    for kind, key in (("mon", "name"), ("mgr", "name"), ("osd", "id")):
        if kind not in kinds:
            continue
        for entry in ceph_required([kind, "metadata"], timeout) or []:
            if isinstance(entry, dict) and key in entry:
                found[kind][str(entry[key])] = {
                    "version": upstream(entry.get("ceph_version_short") or entry.get("ceph_version")),
                    "host": str(entry.get("hostname", "")).split(".")[0],
                }
    return found


def plan_daemons(restart, timeout=30):
    """Every monitor, manager and OSD as a plan entry {type, id, host, version, active,
    restart}: active tells the active manager, restart is restart(entry) (without the key)."""
    metadata = daemon_metadata(timeout)
    active = ceph_required(["mgr", "dump"], timeout).get("active_name", "")
    daemons = []
    for kind in ("mon", "mgr", "osd"):
        for name, daemon in sorted(metadata[kind].items(), key=lambda item: (len(item[0]), item[0])):
            entry = {"type": kind, "id": name, "host": daemon["host"], "version": daemon["version"], "active": kind == "mgr" and name == active}
            entry["restart"] = bool(restart(entry))
            daemons.append(entry)
    return daemons


def running_versions(timeout=30, kinds=("mon", "mgr", "osd")):
    """{"mon": {name: version}, "mgr": {...}, "osd": {id: version}} of kinds (see daemon_metadata)."""
    return dict((kind, dict((i, d["version"]) for i, d in daemons.items())) for kind, daemons in daemon_metadata(timeout, kinds).items())


def quorum(timeout=30):
    """(names in quorum, every monitor's name) of `ceph quorum_status`."""
    status = ceph_required(["quorum_status"], timeout)
    mons = [m.get("name") for m in status.get("monmap", {}).get("mons", [])]
    return list(status.get("quorum_names", [])), mons


def health(timeout=30):
    """(status, {code: summary}) of `ceph health detail`."""
    data = ceph_required(["health", "detail"], timeout)
    checks = {}
    for code, check in (data.get("checks") or {}).items():
        summary = check.get("summary", {})
        checks[code] = summary.get("message", "") if isinstance(summary, dict) else str(summary)
    return data.get("status", ""), checks


def osd_dump(timeout=30):
    return ceph_required(["osd", "dump"], timeout)


def group_flags(dump, bucket):
    return list((dump.get("crush_node_flags") or {}).get(bucket, []))


def marked_noout(timeout=30):
    """{bucket: mark} of the per-host noout flags Carapace set and has not unset yet."""
    rc, data, _ = ceph_json(["config-key", "dump", NOOUT_MARK], timeout)
    if rc != 0 or not isinstance(data, dict):
        return {}
    return dict((key[len(NOOUT_MARK):], value) for key, value in data.items() if key.startswith(NOOUT_MARK))


def marked_options(timeout=30):
    """{(who, name): mark} of the HELD_OPTIONS Carapace set and has not removed yet."""
    rc, data, _ = ceph_json(["config-key", "dump", CONFIG_MARK], timeout)
    if rc != 0 or not isinstance(data, dict):
        return {}
    marks = {}
    for key, value in data.items():
        who, _, name = key[len(CONFIG_MARK):].partition("/")
        if key.startswith(CONFIG_MARK) and who and name:
            marks[(who, name)] = value
    return marks


# What hold_options set (or would set) in this module's run, for its report.
HELD_NOW = []


def hold_options(why, timeout=30):
    """Sets each of HELD_OPTIONS that neither Carapace nor an operator has set, marking it as
    Carapace's; HELD_NOW gathers the "who name=value" of those it set (or would set, in
    check mode)."""
    marks = marked_options(timeout)
    dump = ceph_required(["config", "dump"], timeout)
    entries = set((e.get("section"), e.get("name")) for e in dump if isinstance(e, dict)) if isinstance(dump, list) else set()
    for who, name, value in HELD_OPTIONS:
        if (who, name) in marks or (who, name) in entries:
            continue
        said_as = "%s %s=%s" % (who, name, value)
        HELD_NOW.append(said_as)
        if checking():
            would("set %s in the central configuration while OSDs restart (marked as Carapace's)" % said_as)
            continue
        rc, said = ceph_command(["config-key", "set", CONFIG_MARK + who + "/" + name, "%d %s" % (time.time(), why)], timeout)
        if rc != 0:
            raise Refused("cannot mark the option %s: %s" % (said_as, tail(said)))
        rc, said = ceph_command(["config", "set", who, name, value], timeout)
        if rc != 0:
            raise Refused("ceph config set %s %s %s failed: %s" % (who, name, value, tail(said)))


def release_options(timeout=30, leaving=()):
    """Removes the HELD_OPTIONS Carapace set once no host is under its noout any more (those
    of leaving counted as gone: check mode does not remove their marks). Returns the "who
    name" of those it removed (or would remove, in check mode)."""
    if set(marked_noout(timeout)) - set(leaving):
        return []
    released = []
    for (who, name) in sorted(marked_options(timeout)):
        released.append("%s %s" % (who, name))
        if checking():
            would("remove %s %s from the central configuration (Carapace set it while OSDs restarted)" % (who, name))
            continue
        rc, said = ceph_command(["config", "rm", who, name], timeout)
        # several monitor hosts may clean up at once (cleanup.yml): gone is gone, whoever removed it
        if rc != 0 and any(e.get("section") == who and e.get("name") == name for e in ceph_required(["config", "dump"], timeout) if isinstance(e, dict)):
            raise Refused("ceph config rm %s %s failed: %s" % (who, name, tail(said)))
        ceph_command(["config-key", "rm", CONFIG_MARK + who + "/" + name], timeout)
    return released


def set_noout(bucket, why, timeout=30):
    """Sets noout on a host bucket unless it is set already. Returns True when Carapace set it
    (and marked it as its own), False when it was set before (an operator's: never unset).
    Either way the HELD_OPTIONS are held from now on (hold_options)."""
    hold_options(why, timeout)
    if "noout" in group_flags(osd_dump(timeout), bucket) and bucket not in marked_noout(timeout):
        return False
    if checking():
        would("set noout on the CRUSH bucket %s only (marked as Carapace's)" % bucket)
        return True
    rc, said = ceph_command(["config-key", "set", NOOUT_MARK + bucket, "%d %s" % (time.time(), why)], timeout)
    if rc != 0:
        raise Refused("cannot mark the noout flag of %s: %s" % (bucket, tail(said)))
    rc, said = ceph_command(["osd", "set-group", "noout", bucket], timeout)
    if rc != 0 or "noout" not in group_flags(osd_dump(timeout), bucket):
        raise Refused("ceph osd set-group noout %s did not set it: %s" % (bucket, tail(said)))
    return True


def unset_noout(bucket, timeout=30, release=True):
    """Unsets the noout flag of a host bucket if Carapace set it; True when it did. Unless
    release is False (the caller releases them itself), the HELD_OPTIONS are released once
    no host is left under Carapace's noout (release_options)."""
    done = _unset_noout(bucket, timeout)
    if release:
        release_options(timeout, leaving=(bucket,))
    return done


def _unset_noout(bucket, timeout):
    if bucket not in marked_noout(timeout):
        return False
    if checking():
        would("unset the noout flag Carapace set on %s" % bucket)
        return True
    if "noout" in group_flags(osd_dump(timeout), bucket):
        rc, said = ceph_command(["osd", "unset-group", "noout", bucket], timeout)
        if rc != 0:
            raise Refused("ceph osd unset-group noout %s failed: %s" % (bucket, tail(said)))
    ceph_command(["config-key", "rm", NOOUT_MARK + bucket], timeout)
    return True


def mon_ok_to_stop(name, timeout=30):
    """(ok, Ceph's words) of `ceph mon ok-to-stop NAME`; an unknown name is never ok (Ceph
    itself answers 0 to it)."""
    rc, said = ceph_command(["mon", "ok-to-stop", name], timeout)
    if "invalid mon" in said:
        return False, said
    return rc == 0, said


def osd_ok_to_stop(ids, timeout=30):
    """(ok, Ceph's words) of `ceph osd ok-to-stop IDS`: its JSON, summed up."""
    rc, data, err = ceph_json(["osd", "ok-to-stop"] + [str(i) for i in ids], timeout)
    if isinstance(data, dict):
        words = "ok_to_stop=%s, %s PGs fine, %s PGs not" % (data.get("ok_to_stop"), data.get("num_ok_pgs"), data.get("num_not_ok_pgs"))
        for key in ("bad_become_inactive", "bad_already_inactive", "unknown_pgs"):
            if data.get(key):
                words += ", %s: %s" % (key, " ".join(str(pg) for pg in data[key][:10]))
        if err:
            words = "%s (%s)" % (tail(err, 3), words)
        return rc == 0 and bool(data.get("ok_to_stop")), words
    return False, tail(err) or "no answer (exit %s)" % rc


def safe_to_destroy(ids, timeout=30):
    """(ok, Ceph's words) of `ceph osd safe-to-destroy IDS`."""
    rc, data, err = ceph_json(["osd", "safe-to-destroy"] + ids, timeout)
    if rc != 0 or not isinstance(data, dict):
        return False, tail(err, 3) or "no answer (exit %s)" % rc
    safe = set(str(i) for i in data.get("safe_to_destroy", []))
    blocking = dict((k, data.get(k)) for k in ("active", "missing_stats", "stored_pgs") if data.get(k))
    return set(ids) <= safe and not blocking, "safe_to_destroy=%s%s" % (sorted(safe), "".join(", %s=%s" % (k, v) for k, v in blocking.items()))


def wait_until(check, timeout, interval=2.0):
    """Calls check() until it returns (True, words) or the time is up; returns (ok, last words,
    seconds waited). check may raise Refused, which counts as a 'no' with its message."""
    started = time.time()
    while True:
        try:
            ok, words = check()
        except Refused as err:
            ok, words = False, str(err)
        if ok or time.time() - started >= timeout:
            return ok, words, time.time() - started
        time.sleep(interval)


def pgs_clean(timeout=30):
    """(all PGs active+clean, summary) of `ceph pg stat`; states like active+clean+scrubbing count as clean."""
    data = ceph_required(["pg", "stat"], timeout)
    summary = data.get("pg_summary", data)
    total = int(summary.get("num_pgs", 0) or 0)
    states = summary.get("num_pg_by_state", []) or []
    clean = sum(int(s.get("num", 0) or 0) for s in states if str(s.get("name", "")).startswith("active+clean"))
    words = ", ".join("%s %s" % (s.get("num"), s.get("name")) for s in states) or "no PGs"
    return clean == total, words


def pgs_active_without(osds, timeout=30):
    """(every PG active again without the OSDs `osds`, words), from `ceph pg dump pgs_brief`:
    each PG active, none peering, activating or of unknown state, and none with one of those
    OSDs still in its acting set (the managers' PG statistics lag the OSD map by a report or
    two: a PG that still names a stopped OSD has not been reported since it re-peered)."""
    data = ceph_required(["pg", "dump", "pgs_brief"], timeout)
    pgs = data.get("pg_stats", []) if isinstance(data, dict) else (data or [])
    gone = set(int(o) for o in osds)
    waiting = []
    for pg in pgs:
        state = str(pg.get("state", ""))
        acting = [int(o) for o in pg.get("acting", []) or []]
        if "active" not in state.split("+") or re.search(r"peering|activating|unknown|stale", state):
            waiting.append("%s %s" % (pg.get("pgid"), state))
        elif gone.intersection(acting):
            waiting.append("%s acting %s" % (pg.get("pgid"), acting))
    if waiting:
        return False, "%d of %d PGs not active again yet: %s" % (len(waiting), len(pgs), ", ".join(waiting[:8]) + (", ..." if len(waiting) > 8 else ""))
    return True, "all %d PGs active without %s" % (len(pgs), ", ".join("osd.%d" % o for o in sorted(gone)))


def incarnations(kind, ids, timeout=30):
    """What identifies the running incarnation of each daemon, to tell a restarted one:
    {id: up_from epoch} of OSDs, {id: gid} of managers, {"election_epoch": n} for monitors
    (a restarted monitor rejoins the quorum in a later election)."""
    if kind == "osd":
        osds = dict((str(o.get("osd")), o) for o in osd_dump(timeout).get("osds", []))
        return dict((i, int((osds.get(str(i)) or {}).get("up_from", 0) or 0)) for i in ids)
    if kind == "mgr":
        dump = ceph_required(["mgr", "dump"], timeout)
        gids = {}
        if dump.get("active_name"):
            gids[dump["active_name"]] = int(dump.get("active_gid", 0) or 0)
        for standby in dump.get("standbys", []):
            gids[standby.get("name")] = int(standby.get("gid", 0) or 0)
        return dict((i, gids.get(i, 0)) for i in ids)
    return {"election_epoch": int(ceph_required(["quorum_status"], timeout).get("election_epoch", 0) or 0)}
