#!/usr/bin/python3
# Carapace: hosts taken down for maintenance and brought back (maintenance_enter and
# maintenance_exit): Ceph's gates first, noout for those hosts only, their daemons stopped and
# masked so that a reboot does not start them, and every step recorded so that the way back
# (or a clean-up) knows what to undo.
"""Enter and leave host maintenance, gated by Ceph."""

DOCUMENTATION = r"""
module: carapace_ceph_maintenance
short_description: Host maintenance - gates, noout, daemons stopped and masked, and the way back
description:
  - mode=gate, on a monitor host outside the hosts: finds the hosts' monitors, managers and
    OSDs (their metadata and the CRUSH tree), asks Ceph whether they may all stop together
    (mon ok-to-stop, osd ok-to-stop; a no is asked again every 5 s until ok_to_stop_timeout,
    then the module fails with Ceph's answer and has changed nothing), refuses when no
    manager would be left on another host, then hands the active manager over to one
    elsewhere (ceph mgr fail), sets noout on each host's CRUSH bucket (marked as Carapace's,
    an operator's flag is left alone) and records the hosts in the config-key store
    (carapace/maintenance/HOST). Returns daemons {host: {mon: [], mgr: [], osd: []}}.
  - mode=stop, on a host, for the daemons of kinds (OSDs first, then the monitor and the
    manager: the monitors mark the OSDs down while their quorum is whole): records on the
    host (record, a JSON file) which units it masks and which OSD activation units it
    disables, then disables the activation units (ceph-volume@lvm-ID-*) and masks, with
    --now, the daemons' units: masked units stay stopped across a reboot and an apt upgrade.
  - mode=down, on the monitor: waits (daemon_timeout) until the hosts' OSDs are down (marking
    those still up down), then (at most 120 s) until every PG is active again without them,
    and until their monitors are out of the quorum, the quorum still formed.
  - mode=start, on a host: unmasks what the record (or, without one, what is masked) says,
    re-enables the activation units, and starts the daemons of kinds (mon and mgr first, osd
    after): an OSD with an activation unit through it, since it mounts the OSD's directory.
    Returns the daemons started.
  - mode=back, on the monitor: for the daemons given and those recorded for the hosts at
    their entry, waits (daemon_timeout) until the monitors are in the quorum and the OSDs up
    and in, then (clean_timeout, unless clean is false) every PG active+clean; while other
    hosts are in maintenance, every PG active and none peering, recovering or backfilling
    (theirs stay degraded). Nothing to wait for: returns at once.
  - mode=finish, on the monitor: unsets the hosts' noout flags that Carapace set and removes
    their config-key records.
  - mode=forget, on a host: removes the record.
  - Check mode changes nothing: gate asks Ceph's questions for real (for at most
    check_timeout seconds) and fails with the same message on a no, then reports the manager
    hand-over, the noout flags and the records it would make; stop, start, finish and forget
    report what they would do; down and back ask once and report check_mode_unknown where
    the daemons would be stopped or started only by a real run.
options:
  mode: {type: str, required: true, choices: [gate, stop, down, start, back, finish, forget]}
  hosts: {type: list, elements: str, default: [], description: short host names (gate, back, finish)}
  daemons: {type: dict, default: {}, description: "stop: {mon: [], mgr: [], osd: []} of this host; down, back: the same for all the hosts together"}
  kinds: {type: list, elements: str, default: [mon, mgr, osd], description: stop, start, back - the kinds of daemons to stop, start or wait for}
  clean: {type: bool, default: true, description: back - also wait for every PG active+clean}
  record: {type: path, default: /var/lib/carapace/maintenance.json}
  why: {type: str, default: maintenance}
  ok_to_stop_timeout: {type: int, default: 300}
  daemon_timeout: {type: int, default: 600}
  clean_timeout: {type: int, default: 900}
  cli_timeout: {type: int, default: 30}
  check_timeout: {type: int, default: 30, description: check mode - how long a no of ok-to-stop is asked again}
"""

import json
import os
import re
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import UNKNOWN, check_mode, checking, ensure_dir, osd_activation_units, run, tail, write_file
from ansible.module_utils.carapace_ceph_cluster import (
    Refused,
    ceph_command,
    ceph_json,
    ceph_required,
    daemon_metadata,
    osd_dump,
    osd_ok_to_stop,
    pgs_active_without,
    pgs_clean,
    quorum,
    HELD_NOW,
    set_noout,
    step,
    unset_noout,
    use_librados,
    wait_until,
)

MARK = "carapace/maintenance/"
# The modes run on a monitor host (the others run on the hosts of the maintenance).
MONITOR_MODES = ("gate", "down", "back", "finish")
KINDS = ("mon", "mgr", "osd")



def names(daemons, kind):
    return [str(d) for d in (daemons or {}).get(kind, [])]


# ---------------------------------------------------------------- on a monitor, outside the hosts


def hosts_daemons(hosts, timeout):
    """{host: {mon: [], mgr: [], osd: []}} of the daemons the hosts hold (their metadata, and
    for OSDs also the CRUSH tree: an OSD that never reported metadata still has its place)."""
    metadata = daemon_metadata(timeout)
    found = dict((h, {"mon": [], "mgr": [], "osd": []}) for h in hosts)
    for kind in KINDS:
        for name, daemon in sorted(metadata[kind].items(), key=lambda item: (len(item[0]), item[0])):
            if daemon["host"] in found:
                found[daemon["host"]][kind].append(name)
    for host in hosts:
        rc, tree, _ = ceph_json(["osd", "ls-tree", host], timeout)
        if rc == 0 and isinstance(tree, list):
            for osd in tree:
                if str(osd) not in found[host]["osd"]:
                    found[host]["osd"].append(str(osd))
    return found


def mons_ok_to_stop(mons, timeout):
    rc, said = ceph_command(["mon", "ok-to-stop"] + mons, timeout)
    if "invalid mon" in said:
        return False, said
    return rc == 0, said or "ok"


def gate(p):
    timeout = p["cli_timeout"]
    started = time.time()
    found = hosts_daemons(p["hosts"], timeout)
    mons = [m for h in p["hosts"] for m in found[h]["mon"]]
    mgrs = [m for h in p["hosts"] for m in found[h]["mgr"]]
    osds = [o for h in p["hosts"] for o in found[h]["osd"]]
    steps = []
    dump = ceph_required(["mgr", "dump"], timeout)
    others = [s.get("name") for s in dump.get("standbys", []) if s.get("name") not in mgrs]
    if dump.get("active_name") and dump.get("active_name") not in mgrs:
        others.append(dump["active_name"])
    if not others:
        raise Refused("no manager would be left on another host (managers here: %s): Ceph's own checks (ok-to-stop, PG states) need one" % (", ".join(mgrs) or "none"))
    if mons:
        ok, words, waited = wait_until(lambda: mons_ok_to_stop(mons, timeout), p["ok_to_stop_timeout"], 5)
        if not ok:
            raise Refused("Ceph says mon %s may not stop (asked for %d s): %s" % (", ".join("mon." + m for m in mons), waited, tail(words, 3)))
        steps.append(step("Ceph says %s may stop: %s" % (", ".join("mon." + m for m in mons), tail(words, 1)), started))
    if osds:
        ok, words, waited = wait_until(lambda: osd_ok_to_stop(osds, timeout), p["ok_to_stop_timeout"], 5)
        if not ok:
            raise Refused("Ceph says osd %s may not stop (asked for %d s): %s" % (", ".join("osd." + o for o in osds), waited, words))
        steps.append(step("Ceph says %s may stop: %s" % (", ".join("osd." + o for o in osds), words), started))
    changed = False
    if checking():
        if dump.get("active_name") in mgrs:
            changed = True
            steps.append(step("mgr.%s would hand over to a manager on another host (%s)" % (dump["active_name"], ", ".join(others)), started, changed=True))
        for host in p["hosts"]:
            if found[host]["osd"]:
                if set_noout(host, "%s %s" % (p["why"], host), timeout):
                    changed = True
                    steps.append(step("noout would be set on %s only" % host, started, changed=True))
                else:
                    steps.append(step("noout was set on %s already, by an operator: left as it is" % host, started))
                if HELD_NOW:
                    steps.append(step("clients would be told to look for late operations sooner until the exit: %s" % ", ".join(HELD_NOW), started, changed=True))
                    del HELD_NOW[:]
            steps.append(step("the maintenance of %s would be recorded (config-key %s%s)" % (host, MARK, host), started, changed=True))
            changed = True
        return changed, found, steps
    if dump.get("active_name") in mgrs:
        rc, said = ceph_command(["mgr", "fail", dump["active_name"]], timeout)
        if rc != 0:
            raise Refused("ceph mgr fail %s: %s" % (dump["active_name"], tail(said)))
        ok, words, _ = wait_until(lambda: _active_elsewhere(mgrs, timeout), p["daemon_timeout"], 2)
        if not ok:
            raise Refused("no manager on another host became active after mgr.%s handed over: %s" % (dump["active_name"], words))
        changed = True
        steps.append(step("mgr.%s handed over: %s" % (dump["active_name"], words), started, changed=True))
    for host in p["hosts"]:
        if found[host]["osd"]:
            if set_noout(host, "%s %s" % (p["why"], host), timeout):
                changed = True
                steps.append(step("noout set on %s only" % host, started, changed=True))
            else:
                steps.append(step("noout was set on %s already, by an operator: left as it is" % host, started))
            if HELD_NOW:
                steps.append(step("clients told to look for late operations sooner until the exit: %s" % ", ".join(HELD_NOW), started, changed=True))
                del HELD_NOW[:]
        rc, said = ceph_command(["config-key", "set", MARK + host, json.dumps({"time": int(time.time()), "daemons": found[host]})], timeout)
        if rc != 0:
            raise Refused("cannot record the maintenance of %s: %s" % (host, tail(said)))
    return changed, found, steps


def _active_elsewhere(mgrs, timeout):
    dump = ceph_required(["mgr", "dump"], timeout)
    active = dump.get("active_name", "")
    return bool(active) and active not in mgrs and bool(dump.get("available")), "mgr.%s is active" % (active or "none")


def down(p):
    timeout = p["cli_timeout"]
    started = time.time()
    mons, osds = names(p["daemons"], "mon"), names(p["daemons"], "osd")
    steps = []
    if checking() and (mons or osds):
        return steps, "nothing is stopped in check mode: whether %s go down (and the quorum holds) is known only after a real run" % (
            ", ".join(["mon." + m for m in mons] + ["osd." + o for o in osds]))

    def osds_down():
        states = dict((str(o.get("osd")), o) for o in osd_dump(timeout).get("osds", []))
        up = [i for i in osds if int((states.get(i) or {}).get("up", 0) or 0)]
        return not up, "still up: %s" % ", ".join("osd." + i for i in up) if up else "all down"

    ok, words, _ = wait_until(osds_down, min(30, p["daemon_timeout"]), 2)
    if not ok:
        # stopped, but not reported down yet: say so to the monitors
        ceph_command(["osd", "down"] + osds, timeout)
        ok, words, _ = wait_until(osds_down, p["daemon_timeout"], 2)
    if not ok:
        raise Refused("the OSDs of the hosts are not down: %s" % words)
    if osds:
        steps.append(step("%s down (noout: not marked out, no data moves)" % ", ".join("osd." + i for i in osds), started))
        # Before a monitor of these hosts stops (the next play), every PG has re-peered without
        # these OSDs: peering needs the monitors to record the new primaries' up_thru, and an
        # election started in the middle of it holds client IO for as long as both last.
        peered = time.time()
        ok, words, _ = wait_until(lambda: pgs_active_without(osds, timeout), min(120, p["daemon_timeout"]), 1)
        if not ok:
            raise Refused("the PGs did not all become active again without %s: %s" % (", ".join("osd." + i for i in osds), words))
        steps.append(step("Every PG active again without them: %s" % words, peered))

    def mons_out():
        in_quorum, _ = quorum(timeout)
        left = [m for m in mons if m in in_quorum]
        return not left and bool(in_quorum), "quorum: %s" % ", ".join(in_quorum)

    if mons:
        ok, words, _ = wait_until(mons_out, p["daemon_timeout"], 2)
        if not ok:
            raise Refused("the monitors %s are still in the quorum, or it is lost: %s" % (", ".join(mons), words))
        steps.append(step("%s out of the quorum, which holds (%s)" % (", ".join("mon." + m for m in mons), words), started))
    return steps, None


def marks(timeout):
    """{host: recorded daemons} of the hosts Carapace holds in maintenance (config-key marks)."""
    rc, data, _ = ceph_json(["config-key", "dump", MARK], timeout)
    found = {}
    for key, value in (data or {}).items() if rc == 0 and isinstance(data, dict) else []:
        try:
            found[key[len(MARK):]] = json.loads(value).get("daemons", {})
        except (ValueError, AttributeError):
            found[key[len(MARK):]] = {}
    return found


def pgs_settled(others, timeout):
    """Every PG active+clean; while other hosts are in maintenance, every PG active and none
    peering, recovering or backfilling (their OSDs are down: their PGs stay degraded)."""
    if not others:
        return pgs_clean(timeout)
    data = ceph_required(["pg", "stat"], timeout)
    states = (data.get("pg_summary", data).get("num_pg_by_state", []) or [])
    busy = [s for s in states if not str(s.get("name", "")).startswith("active") or re.search(r"peering|recover|backfill|remapped|stale|incomplete", str(s.get("name", "")))]
    words = ", ".join("%s %s" % (s.get("num"), s.get("name")) for s in states) or "no PGs"
    return not busy, words


def back(p):
    timeout = p["cli_timeout"]
    recorded = marks(timeout)
    mons = sorted(set(names(p["daemons"], "mon")) | set(m for h in p["hosts"] for m in names(recorded.get(h), "mon")))
    osds = sorted(set(names(p["daemons"], "osd")) | set(o for h in p["hosts"] for o in names(recorded.get(h), "osd")), key=lambda i: (len(i), i))
    mons = mons if "mon" in p["kinds"] else []
    osds = osds if "osd" in p["kinds"] else []
    others = sorted(h for h in recorded if h not in p["hosts"])
    steps = []
    started = time.time()
    if not mons and not osds:
        return [step("Nothing of these hosts to wait for", started)], None
    if checking():
        states = dict((str(o.get("osd")), o) for o in osd_dump(timeout).get("osds", []))
        in_quorum, _ = quorum(timeout)
        away = ["mon." + m for m in mons if m not in in_quorum] + ["osd." + i for i in osds if not int((states.get(i) or {}).get("up", 0) or 0)]
        if away:
            return steps, "nothing is started in check mode: whether %s come back (and the PGs settle) is known only after a real run" % ", ".join(away)
        ok, words = pgs_settled(others, timeout) if p["clean"] else (True, "")
        if not ok:
            return steps, "the daemons are back, the PGs are not settled now (%s): a real run would wait up to %d s" % (words, p["clean_timeout"])
        return [step("%s back, the PGs settled" % ", ".join(["mon." + m for m in mons] + ["osd." + i for i in osds]), started)], None
    if mons:
        def mons_in():
            in_quorum, _ = quorum(timeout)
            missing = [m for m in mons if m not in in_quorum]
            return not missing, "not in the quorum yet: %s" % ", ".join(missing) if missing else "quorum: %s" % ", ".join(in_quorum)

        ok, words, waited = wait_until(mons_in, p["daemon_timeout"], 2)
        if not ok:
            raise Refused("monitors not back after %d s: %s" % (waited, words))
        steps.append(step("%s back in the quorum after %.1f s" % (", ".join("mon." + m for m in mons), waited), started))
    if osds:
        def osds_up():
            states = dict((str(o.get("osd")), o) for o in osd_dump(timeout).get("osds", []))
            bad = [i for i in osds if not (int((states.get(i) or {}).get("up", 0) or 0) and int((states.get(i) or {}).get("in", 0) or 0))]
            return not bad, "not up and in yet: %s" % ", ".join("osd." + i for i in bad) if bad else "up and in"

        ok, words, waited = wait_until(osds_up, p["daemon_timeout"], 2)
        if not ok:
            raise Refused("OSDs not back after %d s (noout stays set, nothing moves): %s" % (waited, words))
        steps.append(step("%s up and in after %.1f s" % (", ".join("osd." + i for i in osds), waited), started))
    if not p["clean"]:
        return steps, None
    clean_started = time.time()
    ok, words, waited = wait_until(lambda: pgs_settled(others, timeout), p["clean_timeout"], 2)
    if not ok:
        raise Refused("PGs not all %s after %d s (noout stays set): %s" % ("active+clean" if not others else "active and settled", waited, words))
    if others:
        steps.append(step("Every PG active, none recovering, after %.1f s (%s still in maintenance: %s)" % (waited, ", ".join(others), words), clean_started))
    else:
        steps.append(step("Every PG active+clean after %.1f s" % waited, clean_started))
    return steps, None


def finish(p):
    timeout = p["cli_timeout"]
    started = time.time()
    steps = []
    changed = False
    for host in p["hosts"]:
        if unset_noout(host, timeout):
            changed = True
            steps.append(step("noout %s on %s" % ("would be unset" if checking() else "unset", host), started, changed=True))
        if checking():
            rc, _ = ceph_command(["config-key", "exists", MARK + host], timeout)
            if rc == 0:
                changed = True
                steps.append(step("the maintenance record of %s would be removed" % host, started, changed=True))
            continue
        ceph_command(["config-key", "rm", MARK + host], timeout)
    return changed, steps


# ---------------------------------------------------------------- on a host of the maintenance


def read_record(path):
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def daemon_units(daemons):
    return (["ceph-mon@%s.service" % m for m in names(daemons, "mon")] + ["ceph-mgr@%s.service" % m for m in names(daemons, "mgr")]
            + ["ceph-osd@%s.service" % o for o in names(daemons, "osd")])


def active(unit):
    rc, out, _ = run(["systemctl", "is-active", unit], timeout=30)
    return out.strip() in ("active", "activating", "deactivating", "reloading")


def stop(p):
    started = time.time()
    daemons = dict((kind, names(p["daemons"], kind) if kind in p["kinds"] else []) for kind in KINDS)
    units = daemon_units(daemons)
    activation = osd_activation_units(names(daemons, "osd"))
    if not units:
        return [step("No %s daemon on this host" % ", ".join(p["kinds"]), started)]
    if checking():
        return [step("%s would be stopped and masked%s" % (", ".join(units), "; %s disabled" % ", ".join(activation) if activation else ""), started, changed=True)]
    record = read_record(p["record"])
    masked = sorted(set(record.get("masked", [])) | set(units))
    disabled = sorted(set(record.get("disabled", [])) | set(activation))
    ensure_dir(os.path.dirname(p["record"]), 0o755)
    write_file(p["record"], json.dumps({"time": int(time.time()), "masked": masked, "disabled": disabled}, indent=1) + "\n", 0o644)
    if activation:
        rc, out, err = run(["systemctl", "disable"] + activation, timeout=120)
        if rc != 0:
            raise Refused("systemctl disable %s: %s" % (" ".join(activation), tail(err or out)))
    rc, out, err = run(["systemctl", "mask", "--now"] + units, timeout=p["daemon_timeout"])
    if rc != 0:
        raise Refused("systemctl mask --now %s: %s" % (" ".join(units), tail(err or out)))
    still = [u for u in units if active(u)]
    if still:
        raise Refused("still running after the stop: %s" % ", ".join(still))
    return [step("%s stopped and masked%s" % (", ".join(units), "; %s disabled" % ", ".join(activation) if activation else ""), started, changed=True)]


def masked_here():
    rc, out, _ = run(["systemctl", "list-unit-files", "--state=masked", "--plain", "--no-legend", "ceph-mon@*", "ceph-mgr@*", "ceph-osd@*"], timeout=60)
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def start(p):
    started = time.time()
    record = read_record(p["record"])
    masked = sorted(set(record.get("masked", [])) | set(masked_here()))
    disabled = record.get("disabled", [])
    kind_of = lambda unit: re.match(r"^ceph-(mon|mgr|osd)@", unit).group(1) if re.match(r"^ceph-(mon|mgr|osd)@", unit) else ""
    chosen = [u for u in masked if kind_of(u) in p["kinds"]]
    if not chosen:
        return False, [], [step("Nothing of %s to start on this host" % ", ".join(p["kinds"]), started)]
    if checking():
        daemons = {"mon": [], "mgr": [], "osd": []}
        for unit in chosen:
            match = re.match(r"^ceph-(mon|mgr|osd)@(.+)\.service$", unit)
            if match:
                daemons[match.group(1)].append(match.group(2))
        return True, daemons, [step("%s would be unmasked and started%s" % (", ".join(chosen), "; %s enabled" % ", ".join(disabled) if "osd" in p["kinds"] and disabled else ""),
                                    started, changed=True)]
    rc, out, err = run(["systemctl", "unmask"] + chosen, timeout=120)
    if rc != 0:
        raise Refused("systemctl unmask %s: %s" % (" ".join(chosen), tail(err or out)))
    run(["systemctl", "reset-failed"] + chosen, timeout=60)
    through_activation = []
    if "osd" in p["kinds"] and disabled:
        rc, out, err = run(["systemctl", "enable"] + disabled, timeout=120)
        if rc != 0:
            raise Refused("systemctl enable %s: %s" % (" ".join(disabled), tail(err or out)))
        through_activation = [re.match(r"^ceph-volume@(?:lvm|raw)-(\d+)-", u).group(1) for u in disabled if re.match(r"^ceph-volume@(?:lvm|raw)-(\d+)-", u)]
        rc, out, err = run(["systemctl", "start"] + disabled, timeout=p["daemon_timeout"])
        if rc != 0:
            raise Refused("systemctl start %s: %s" % (" ".join(disabled), tail(err or out)))
    direct = [u for u in chosen if not (kind_of(u) == "osd" and re.match(r"^ceph-osd@(\d+)\.service$", u).group(1) in through_activation)]
    if direct:
        rc, out, err = run(["systemctl", "start"] + direct, timeout=p["daemon_timeout"])
        if rc != 0:
            raise Refused("systemctl start %s: %s" % (" ".join(direct), tail(err or out)))
    if record:
        rest = [u for u in record.get("masked", []) if u not in chosen]
        write_file(p["record"], json.dumps(dict(record, masked=rest), indent=1) + "\n", 0o644)
    daemons = {"mon": [], "mgr": [], "osd": []}
    for unit in chosen:
        match = re.match(r"^ceph-(mon|mgr|osd)@(.+)\.service$", unit)
        if match:
            daemons[match.group(1)].append(match.group(2))
    return True, daemons, [step("%s unmasked and started" % ", ".join(chosen), started, changed=True)]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", required=True, choices=["gate", "stop", "down", "start", "back", "finish", "forget"]),
            hosts=dict(type="list", elements="str", default=[]),
            daemons=dict(type="dict", default={}),
            kinds=dict(type="list", elements="str", default=["mon", "mgr", "osd"]),
            clean=dict(type="bool", default=True),
            record=dict(type="path", default="/var/lib/carapace/maintenance.json"),
            why=dict(type="str", default="maintenance"),
            ok_to_stop_timeout=dict(type="int", default=300),
            daemon_timeout=dict(type="int", default=600),
            clean_timeout=dict(type="int", default=900),
            cli_timeout=dict(type="int", default=30),
            check_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if check_mode(module):
        p["ok_to_stop_timeout"] = min(p["ok_to_stop_timeout"], p["check_timeout"])
    bad = [h for h in p["hosts"] if not re.match(r"^[A-Za-z0-9][A-Za-z0-9-]*$", h)]
    if bad:
        module.fail_json(msg="not short host names: %s" % ", ".join(bad))
    for kind, listed in (p["daemons"] or {}).items():
        if kind not in KINDS or not isinstance(listed, list) or any(not re.match(r"^[A-Za-z0-9._-]+$", str(d)) for d in listed):
            module.fail_json(msg="daemons must be {mon: [...], mgr: [...], osd: [...]} of daemon ids, got %s" % json.dumps(p["daemons"]))
    if p["mode"] in MONITOR_MODES:
        # many short questions to the cluster: one librados connection, not a ceph process each
        use_librados(p["cli_timeout"])
    try:
        mode = p["mode"]
        if mode == "gate":
            changed, found, steps = gate(p)
            module.exit_json(changed=changed, daemons=found, carapace_steps=steps)
        if mode == "stop":
            module.exit_json(changed=True, carapace_steps=stop(p))
        if mode == "down":
            steps, unknown = down(p)
            module.exit_json(changed=False, carapace_steps=steps, **({UNKNOWN: unknown} if unknown else {}))
        if mode == "start":
            changed, daemons, steps = start(p)
            module.exit_json(changed=changed, daemons=daemons, carapace_steps=steps)
        if mode == "back":
            steps, unknown = back(p)
            module.exit_json(changed=False, carapace_steps=steps, **({UNKNOWN: unknown} if unknown else {}))
        if mode == "finish":
            changed, steps = finish(p)
            module.exit_json(changed=changed, carapace_steps=steps)
        existed = os.path.exists(p["record"])
        if existed and not checking():
            os.unlink(p["record"])
        module.exit_json(changed=existed)
    except Refused as err:
        module.fail_json(msg=str(err))


if __name__ == "__main__":
    main()
