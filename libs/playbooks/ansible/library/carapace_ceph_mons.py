#!/usr/bin/python3
# Carapace: monitors of a running cluster added and removed one at a time (add_mon, remove_mon,
# replace_mon), each step behind the quorum: a monitor joins from the cluster's own map and
# key (never a map of its own, which would fork the cluster), and leaves the map while it
# still runs, once Ceph says the rest keep a majority (mon ok-to-rm).
"""Add and remove Ceph monitors without losing the quorum."""

DOCUMENTATION = r"""
module: carapace_ceph_mons
short_description: Adds and removes Ceph monitors of a running cluster, behind Ceph's quorum checks
description:
  - mode=gate_add, on a monitor: every monitor of the map must be in quorum; the name and the
    address must not be taken by another monitor (the same name at the same address, in
    quorum, is a monitor already there: present=true, nothing to do); the address must be in
    the cluster's public_network; `ceph mon ok-to-add-offline` must say yes (from 1 monitor
    to 2 it never does: allowed, the new monitor enters the map only once it has joined).
    Returns present and the monitors' versions.
  - mode=seed, on a monitor: the cluster's mon. and client.admin keyrings and its current
    monitor map (base64). Secret: call it with no_log.
  - mode=create, on the new host: its ceph-mon must be of a version the monitors run; a
    monitor store left there by an earlier monitor is refused (a store made by this module
    and not joined yet is used); the store is made with ceph-mon --mkfs from the map and the
    key, and ceph-mon@NAME enabled and started. No `mon add`: the monitor joins by itself.
  - mode=joined, on a monitor: waits (join_timeout) until NAME is in the map and in quorum,
    and every monitor of the map in quorum.
  - mode=gate_remove, on a monitor that stays: finds the monitor by address (else by name);
    refuses the last monitor, any other monitor out of quorum, and a no of
    `ceph mon ok-to-rm NAME`. A monitor no longer in the map: present=false, nothing to do.
  - mode=remove, on a monitor that stays: `ceph mon rm NAME` while it runs, then waits
    (quorum_timeout) until it is gone from the map and every remaining monitor in quorum.
  - mode=retire, on the old host: ceph-mon@NAME stopped and disabled, its store moved to
    /var/lib/ceph/mon/removed-ceph-NAME-TIME, the admin keyring removed (only monitors hold it).
  - mode=conf, on a monitor: the mon_host line of the monitors as they are (in rank order)
    and the client ceph.conf (`ceph config generate-minimal-conf`).
  - Check mode asks every gate for real (gate_add, gate_remove fail as in a real run) and
    reads the keys and the map (seed); create, remove and retire change nothing and report
    what they would do (would_change); joined asks once, without waiting, and reports
    check_mode_unknown where the monitor would only be there after a real run.
options:
  mode: {type: str, required: true, choices: [gate_add, seed, create, joined, gate_remove, remove, retire, conf]}
  name: {type: str, default: ""}
  address: {type: str, default: ""}
  fsid: {type: str, default: ""}
  mon_keyring: {type: str, default: "", no_log: true}
  admin_keyring: {type: str, default: "", no_log: true}
  monmap: {type: str, default: "", description: the monitor map, base64}
  versions: {type: list, elements: str, default: []}
  present: {type: bool, default: false}
  join_timeout: {type: int, default: 600}
  quorum_timeout: {type: int, default: 300}
  cli_timeout: {type: int, default: 30}
"""

import base64
import ipaddress
import os
import shutil
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import (
    CHECK,
    UNKNOWN,
    CommandError,
    ceph,
    check_mode,
    check_result,
    checking,
    ensure_dir,
    make_mon_store,
    read_text,
    run,
    systemd_running,
    tail,
    would,
    write_file,
)
from ansible.module_utils.carapace_ceph_cluster import Refused, ceph_command, ceph_required, daemon_metadata, step, upstream, use_librados, wait_until
from ansible.module_utils.carapace_ceph_options import conf_value

MON_DIR = "/var/lib/ceph/mon"
ADMIN_KEYRING = "/etc/ceph/ceph.client.admin.keyring"
# Written into a store this module made, until it is known to the cluster: a store without it
# is an earlier monitor's, which would refuse to start (removed from the map) or fork the cluster.
JOINING_MARK = "carapace-joining"


def entry_ip(entry):
    """The IP of a monitor map entry (its first public address, without port and nonce)."""
    for addr in (entry.get("public_addrs") or {}).get("addrvec") or []:
        text = str(addr.get("addr", ""))
        if text:
            return text.rsplit(":", 1)[0].strip("[]")
    text = str(entry.get("public_addr") or entry.get("addr") or "")
    return text.split("/")[0].rsplit(":", 1)[0].strip("[]")


def mon_host_value(entry):
    vec = (entry.get("public_addrs") or {}).get("addrvec") or []
    if vec:
        return "[" + ",".join("%s:%s" % (a.get("type"), a.get("addr")) for a in vec) + "]"
    return str(entry.get("public_addr") or entry.get("addr") or "").split("/")[0]


def status(timeout):
    """(monitor map entries in rank order, names in quorum) of `ceph quorum_status`."""
    data = ceph_required(["quorum_status"], timeout)
    mons = sorted((data.get("monmap") or {}).get("mons") or [], key=lambda m: int(m.get("rank", 0) or 0))
    return mons, list(data.get("quorum_names") or [])


def describe(mons, quorum):
    return "map: %s; quorum: %s" % (", ".join(m.get("name", "?") for m in mons) or "none", ", ".join(quorum) or "none")


def gate_add(p):
    timeout = p["cli_timeout"]
    steps = []
    started = time.time()
    mons, quorum = status(timeout)
    out = [m.get("name") for m in mons if m.get("name") not in quorum]
    if out:
        raise Refused("monitors out of quorum: %s (%s). A monitor added now could break the quorum while it syncs; bring them back, or remove them (remove_mon), first" % (", ".join(out), describe(mons, quorum)))
    steps.append(step("every monitor in quorum (%s)" % ", ".join(quorum), started))
    name, address = p["name"], p["address"]
    same_name = [m for m in mons if m.get("name") == name]
    same_ip = [m for m in mons if entry_ip(m) == address]
    if same_name and entry_ip(same_name[0]) == address:
        steps.append(step("mon.%s is already in the map at %s and in quorum: nothing to add" % (name, address)))
        return {"present": True, "versions": versions(timeout), "carapace_steps": steps}
    if same_name:
        raise Refused("a monitor named %s is already in the map, at %s (this host is %s): remove it first (remove_mon)" % (name, entry_ip(same_name[0]), address))
    if same_ip:
        raise Refused("address %s is already mon.%s's (this host is named %s)" % (address, same_ip[0].get("name"), name))
    network = conf_value(read_text("/etc/ceph/ceph.conf") or "", "global", "public_network")
    if network:
        try:
            inside = any(ipaddress.ip_address(address) in ipaddress.ip_network(n.strip(), strict=False) for n in network.split(",") if n.strip())
        except ValueError as err:
            raise Refused("cannot tell whether %s is in public_network %s: %s" % (address, network, err))
        if not inside:
            raise Refused("%s is outside the cluster's public_network %s: a monitor there could not be reached" % (address, network))
    started = time.time()
    rc, said = ceph_command(["mon", "ok-to-add-offline"], timeout)
    if rc != 0 and len(mons) != 1:
        raise Refused("Ceph says no (mon ok-to-add-offline, exit %s): %s" % (rc, tail(said, 3)))
    if rc != 0:
        steps.append(step("Ceph says adding may break the quorum until the new monitor starts (%s): from 1 monitor to 2 it always does; the new one enters the map only once it has joined" % tail(said, 1), started))
    else:
        steps.append(step("Ceph says mon.%s may be added: %s" % (name, tail(said, 1)), started))
    if (len(mons) + 1) % 2 == 0:
        steps.append(step("note: %d monitors tolerate no more failures than %d" % (len(mons) + 1, len(mons))))
    return {"present": False, "versions": versions(timeout), "carapace_steps": steps}


def versions(timeout):
    return sorted(set(d["version"] for d in daemon_metadata(timeout, ("mon",))["mon"].values() if d["version"]))


def seed(p):
    timeout = p["cli_timeout"]
    work = tempfile.mkdtemp(prefix="carapace-monmap-")
    try:
        path = os.path.join(work, "monmap")
        ceph(["mon", "getmap", "-o", path], timeout=timeout)
        with open(path, "rb") as handle:
            monmap = base64.b64encode(handle.read()).decode("ascii")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _, mon_keyring, _ = ceph(["auth", "get", "mon."], timeout=timeout)
    _, admin_keyring, _ = ceph(["auth", "get", "client.admin"], timeout=timeout)
    for what, text in (("mon.", mon_keyring), ("client.admin", admin_keyring)):
        if "key = " not in text:
            raise Refused("ceph auth get %s gave no key" % what)
    return {"monmap": monmap, "mon_keyring": mon_keyring, "admin_keyring": admin_keyring}


def create(p):
    name = p["name"]
    data = os.path.join(MON_DIR, "ceph-%s" % name)
    steps = []
    rc, out, err = run(["ceph-mon", "--version"], timeout=60)
    here = upstream(out)
    if (rc != 0 or not here) and checking():
        # the packages a real run installs first are not installed in check mode
        steps.append(step("ceph-mon is not installed here yet: its version is compared once it is"))
        here = (p["versions"] or [""])[0]
    elif rc != 0 or not here:
        raise Refused("ceph-mon is not installed here: %s" % tail(err or out, 3))
    if p["versions"] and here not in p["versions"]:
        raise Refused("ceph-mon %s here, the monitors run %s: the same version first (upgrade_ceph, or this host's packages)" % (here, ", ".join(p["versions"])))
    steps.append(step("ceph-mon %s here, as the monitors" % here))
    made = os.path.exists(os.path.join(data, "keyring"))
    if made and not p["present"] and not os.path.exists(os.path.join(data, JOINING_MARK)):
        raise Refused("%s holds the store of an earlier monitor: it would not join (removed from the map) or could fork the cluster; move it away first" % data)
    changed = False
    changed |= ensure_dir("/etc/ceph", 0o755)
    changed |= write_file(ADMIN_KEYRING, p["admin_keyring"], 0o600, secret=True)
    if not made:
        if os.path.isdir(data) and os.listdir(data):
            raise Refused("%s is not empty and holds no monitor store: move it away first" % data)
        started = time.time()
        make_mon_store(name, p["fsid"], p["mon_keyring"], base64.b64decode(p["monmap"]))
        write_file(os.path.join(data, JOINING_MARK), p["fsid"] + "\n", 0o644, "ceph", "ceph")
        steps.append(step("mon.%s store made from the cluster's map and key" % name, started, changed=True))
        changed = True
    started = time.time()
    if systemd_running(["ceph-mon.target", "ceph-mon@%s.service" % name]):
        changed = True
        steps.append(step("ceph-mon@%s started" % name, started, changed=True))
    return changed, steps


def joined(p):
    name = p["name"]
    timeout = p["cli_timeout"]
    started = time.time()

    def check():
        mons, quorum = status(timeout)
        names = [m.get("name") for m in mons]
        ok = name in names and all(n in quorum for n in names)
        return ok, describe(mons, quorum)

    if checking():
        ok, words = check()
        if not ok:
            return [step("mon.%s: whether it joins is known only after a real run (%s)" % (name, words), started)], \
                "mon.%s is not made or started in check mode, so whether it joins the quorum is known only after a real run (now: %s)" % (name, words)
        return [step("mon.%s in quorum (%s)" % (name, words), started)], None
    ok, words, waited = wait_until(check, p["join_timeout"], 2.0)
    if not ok:
        raise Refused("mon.%s did not join the quorum within %d s (%s). It syncs the cluster's store first, which takes long on a large one; "
                      "it is left running: `ceph daemon mon.%s mon_status` on its host tells its state, remove_mon takes it away" % (name, waited, words, name))
    return [step("mon.%s in quorum after %.0f s (%s)" % (name, waited, words), started)], None


def find(mons, name, address):
    for entry in mons:
        if address and entry_ip(entry) == address:
            return entry
    for entry in mons:
        if entry.get("name") == name:
            return entry
    return None


def gate_remove(p):
    timeout = p["cli_timeout"]
    started = time.time()
    mons, quorum = status(timeout)
    entry = find(mons, p["name"], p["address"])
    if entry is None:
        return {"present": False, "name": p["name"], "carapace_steps": [step("no monitor at %s nor named %s in the map (%s): nothing to remove" % (p["address"], p["name"], describe(mons, quorum)), started)]}
    name = entry.get("name")
    if len(mons) <= 1:
        raise Refused("mon.%s is the last monitor of the cluster: a cluster cannot live without one" % name)
    out = [m.get("name") for m in mons if m.get("name") != name and m.get("name") not in quorum]
    if out:
        raise Refused("other monitors are out of quorum: %s (%s). Removing mon.%s now could leave the rest without a majority; bring them back, or remove them first" % (", ".join(out), describe(mons, quorum), name))
    steps = [step("the other monitors in quorum (%s)" % describe(mons, quorum), started)]
    started = time.time()
    rc, said = ceph_command(["mon", "ok-to-rm", name], timeout)
    if rc != 0 or "does not exist" in said:
        raise Refused("Ceph says no (mon ok-to-rm %s, exit %s): %s" % (name, rc, tail(said, 3)))
    steps.append(step("Ceph says mon.%s may be removed: %s" % (name, tail(said, 1)), started))
    return {"present": True, "name": name, "carapace_steps": steps}


def remove(p):
    name = p["name"]
    timeout = p["cli_timeout"]
    steps = []
    started = time.time()
    mons, _ = status(timeout)
    if checking():
        if any(m.get("name") == name for m in mons):
            would("ceph mon rm %s, then wait for the quorum of the others" % name)
            return [step("mon.%s would be removed from the map" % name, started, changed=True)]
        return [step("mon.%s is not in the map: nothing to remove" % name, started)]
    if any(m.get("name") == name for m in mons):
        rc, said = ceph_command(["mon", "rm", name], timeout)
        if rc != 0:
            raise Refused("ceph mon rm %s failed (exit %s): %s" % (name, rc, tail(said, 3)))
        steps.append(step("mon.%s removed from the map" % name, started, changed=True))
    started = time.time()

    def check():
        mons, quorum = status(timeout)
        names = [m.get("name") for m in mons]
        return name not in names and all(n in quorum for n in names), describe(mons, quorum)

    ok, words, waited = wait_until(check, p["quorum_timeout"], 1.0)
    if not ok:
        raise Refused("mon.%s is out of the map, but the remaining monitors did not form their quorum within %d s (%s)" % (name, waited, words))
    steps.append(step("the quorum of the remaining monitors after %.0f s (%s)" % (waited, words), started))
    return steps


def retire(p):
    name = p["name"]
    steps = []
    changed = False
    unit = "ceph-mon@%s.service" % name
    started = time.time()
    _, enabled, _ = run(["systemctl", "is-enabled", unit], timeout=60)
    _, active, _ = run(["systemctl", "is-active", unit], timeout=60)
    data = os.path.join(MON_DIR, "ceph-%s" % name)
    if checking():
        if enabled.strip() not in ("disabled", "not-found", "") or active.strip() not in ("inactive", "failed", "unknown", ""):
            would("stop and disable %s" % unit)
        if os.path.exists(data):
            would("move the store %s to %s/removed-ceph-%s-TIME" % (data, MON_DIR, name))
        if os.path.exists(ADMIN_KEYRING):
            would("remove the admin keyring %s" % ADMIN_KEYRING)
        return bool(CHECK["would"]), [step("would: %s" % w, started, changed=True) for w in CHECK["would"]]
    if enabled.strip() not in ("disabled", "not-found", "") or active.strip() not in ("inactive", "failed", "unknown", ""):
        run(["systemctl", "disable", "--now", unit], timeout=300, check=True)
        changed = True
    run(["systemctl", "reset-failed", unit], timeout=60)
    if os.path.exists(data):
        kept = os.path.join(MON_DIR, "removed-ceph-%s-%s" % (name, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())))
        os.rename(data, kept)
        changed = True
        steps.append(step("ceph-mon@%s stopped and disabled, its store kept in %s" % (name, kept), started, changed=True))
    elif changed:
        steps.append(step("ceph-mon@%s stopped and disabled" % name, started, changed=True))
    if os.path.exists(ADMIN_KEYRING):
        os.remove(ADMIN_KEYRING)
        changed = True
        steps.append(step("the admin keyring removed from this host (only monitors hold it)", changed=True))
    return changed, steps


def conf(p):
    timeout = p["cli_timeout"]
    mons, _ = status(timeout)
    if not mons:
        raise Refused("the monitor map is empty")
    rc, out, err = ceph(["config", "generate-minimal-conf"], timeout=timeout, check=False)
    return {"mon_host": ",".join(mon_host_value(m) for m in mons), "names": [m.get("name") for m in mons],
            "client_conf": out.strip() + "\n" if rc == 0 else "", "client_conf_error": "" if rc == 0 else tail(err, 3)}


MONITOR_MODES = ("gate_add", "joined", "gate_remove", "remove", "conf")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", required=True, choices=["gate_add", "seed", "create", "joined", "gate_remove", "remove", "retire", "conf"]),
            name=dict(type="str", default=""),
            address=dict(type="str", default=""),
            fsid=dict(type="str", default=""),
            mon_keyring=dict(type="str", default="", no_log=True),
            admin_keyring=dict(type="str", default="", no_log=True),
            monmap=dict(type="str", default=""),
            versions=dict(type="list", elements="str", default=[]),
            present=dict(type="bool", default=False),
            join_timeout=dict(type="int", default=600),
            quorum_timeout=dict(type="int", default=300),
            cli_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    check_mode(module)
    mode = p["mode"]
    if mode in ("gate_add", "create", "joined", "retire") and not p["name"]:
        module.fail_json(msg="mode %s needs the monitor's name" % mode)
    if mode in ("gate_add", "gate_remove"):
        try:
            ipaddress.ip_address(p["address"])
        except ValueError:
            module.fail_json(msg="mode %s needs the monitor's IP address, got %r" % (mode, p["address"]))
    if mode == "create" and not (p["fsid"] and p["mon_keyring"] and p["admin_keyring"] and p["monmap"]):
        module.fail_json(msg="mode create needs fsid, mon_keyring, admin_keyring and monmap (from mode seed)")
    if mode in MONITOR_MODES:
        # several short questions to the cluster: one librados connection, not a ceph process each
        use_librados(p["cli_timeout"])
    try:
        if mode == "gate_add":
            module.exit_json(changed=False, **gate_add(p))
        if mode == "seed":
            module.exit_json(changed=False, **seed(p))
        if mode == "create":
            changed, steps = create(p)
            module.exit_json(**check_result(changed=changed, carapace_steps=steps))
        if mode == "joined":
            steps, unknown = joined(p)
            module.exit_json(changed=False, carapace_steps=steps, **({UNKNOWN: unknown} if unknown else {}))
        if mode == "gate_remove":
            module.exit_json(changed=False, **gate_remove(p))
        if mode == "remove":
            steps = remove(p)
            module.exit_json(**check_result(changed=bool(steps) and steps[0]["changed"], carapace_steps=steps))
        if mode == "retire":
            changed, steps = retire(p)
            module.exit_json(**check_result(changed=changed, carapace_steps=steps))
        module.exit_json(changed=False, **conf(p))
    except Refused as err:
        module.fail_json(msg=str(err))
    except CommandError as err:
        module.fail_json(msg=str(err), rc=err.rc)


if __name__ == "__main__":
    main()
