#!/usr/bin/python3
# Carapace: a failed disk replaced keeping its OSD id (replace_osd). The OSD leaves only once
# Ceph says its data is safe elsewhere; it is destroyed, not purged, so that its id, CRUSH
# place and weight stay; the new device is made into an OSD with that same id.
"""Replace OSDs' disks, keeping their ids."""

DOCUMENTATION = r"""
module: carapace_ceph_replace
short_description: Replaces the disks of OSDs, keeping their ids, each step behind Ceph's own checks
description:
  - mode=locate, on a monitor: each OSD must exist and sit under the host's CRUSH bucket
    (host), and an encrypted one (its dm-crypt key in config-key) is only replaced with
    dmcrypt; returns, for each, whether it is up, in, already destroyed and encrypted. Fails
    naming every problem, having changed nothing.
  - mode=drain, on a monitor: marks out the OSDs that are in (marked as Carapace's in the
    config-key store, carapace/replace/ID), then waits (safe_to_destroy_timeout) until `ceph osd
    safe-to-destroy` names each in safe_to_destroy and nothing in active, missing_stats or
    stored_pgs, twice in a row. When the time is up, the OSDs Carapace marked out are marked
    in again and the module fails with Ceph's answer; nothing was stopped.
  - mode=undrain, on a monitor (the clean-up of a failed or canceled run): the OSDs Carapace
    marked out that are still up are marked in again.
  - mode=stop, on the OSDs' host: stops and disables ceph-osd@ID and the OSDs' activation
    units, clears their failed state, and closes the device-mapper devices the old disk
    carried (an encrypted OSD's dm-crypt mapping, an lvm OSD's logical volume: read from the
    OSD's block before its directory is unmounted), which would otherwise stay open on a
    failed or pulled disk. The old disk itself is not touched.
  - mode=destroy, on a monitor: `ceph osd down`, until Ceph sees them down, then `ceph osd
    destroy ID` without --yes-i-really-mean-it (the manager asks safe-to-destroy once more),
    and checks they are destroyed.
  - mode=create, on the host: each new device must be free (no signature; with wipe, a device
    holding something else is zapped first; never one holding another OSD of this cluster);
    the old OSD's directory is removed, then ceph-volume makes the OSD with the same id (raw
    prepare --no-tmpfs, or lvm create) and it is started. A device that already holds this
    OSD id (a rerun) is only started. Returns the new devices' sizes.
  - mode=back, on a monitor: waits (daemon_timeout) until the OSDs are up under a new
    incarnation and in, sets their CRUSH weight to the new device's size when it differs by
    more than 2 %, waits (clean_timeout) for every PG active+clean, and removes the marks.
  - Check mode changes nothing: locate and the safe-to-destroy question are asked for real
    (once); a no while the OSDs are still in is check_mode_unknown (their data would only
    move once they are marked out); stop, destroy and create report what they would do
    (a device that is not free, without wipe, fails as in a real run); back is
    check_mode_unknown (nothing was replaced).
options:
  mode: {type: str, required: true, choices: [locate, drain, undrain, stop, destroy, create, back]}
  osds: {type: list, elements: dict, required: true, description: "[{id, device}]"}
  host: {type: str, default: "", description: the short name of the OSDs' host (locate)}
  fsid: {type: str, default: ""}
  osd_mode: {type: str, default: raw, choices: [raw, lvm]}
  dmcrypt: {type: bool, default: false}
  wipe: {type: bool, default: false}
  before: {type: dict, default: {}, description: "back: {id: up_from} before the replacement"}
  sizes: {type: dict, default: {}, description: "back: {id: bytes} of the new devices"}
  safe_to_destroy_timeout: {type: int, default: 600}
  daemon_timeout: {type: int, default: 600}
  clean_timeout: {type: int, default: 900}
  cli_timeout: {type: int, default: 30}
"""

import os
import re
import shutil
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import (
    UNKNOWN,
    check_mode,
    checking,
    osd_activation_units,
    osd_device_mapper_chain,
    remove_device_mapper_chain,
    run,
    tail,
)
from ansible.module_utils.carapace_ceph_cluster import (
    Refused,
    ceph_command,
    ceph_json,
    ceph_required,
    osd_dump,
    pgs_clean,
    safe_to_destroy,
    step,
    use_librados,
    wait_until,
)
from ansible.module_utils.carapace_ceph_devices import ToolMissing, scan

MARK = "carapace/replace/"
# The modes run on a monitor host (the others on the OSDs' host).
MONITOR_MODES = ("locate", "drain", "undrain", "destroy", "back")
TIB = 1024 ** 4



def osd_states(timeout):
    return dict((str(o.get("osd")), o) for o in osd_dump(timeout).get("osds", []))


# ---------------------------------------------------------------- on a monitor


def locate(p):
    timeout = p["cli_timeout"]
    states = osd_states(timeout)
    problems, found = [], {}
    for osd in p["osds"]:
        i = osd["id"]
        state = states.get(i)
        if state is None:
            problems.append("osd.%s does not exist" % i)
            continue
        rc, where, err = ceph_json(["osd", "find", i], timeout)
        host = str(((where or {}).get("crush_location") or {}).get("host", "")) if rc == 0 else ""
        if host != p["host"]:
            problems.append("osd.%s is %s, not on %s" % (i, "on " + host if host else "under no host (%s)" % tail(err, 1), p["host"]))
            continue
        encrypted = is_encrypted(state.get("uuid"), timeout)
        if encrypted and not p["dmcrypt"]:
            problems.append(
                "osd.%s is encrypted (the monitors hold its dm-crypt key): give dmcrypt: true, so that its replacement is"
                " encrypted too; Carapace does not put an encrypted OSD's data in clear" % i)
            continue
        found[i] = {"up": bool(state.get("up")), "in": bool(state.get("in")), "destroyed": "destroyed" in (state.get("state") or []),
                    "up_from": int(state.get("up_from", 0) or 0), "encrypted": encrypted}
    if problems:
        raise Refused("; ".join(problems))
    return found


def is_encrypted(uuid, timeout):
    """Whether the OSD of this uuid is a dm-crypt OSD: ceph-volume keeps its key in the
    monitors' config-key store, dm-crypt/osd/UUID/luks (until `osd destroy` removes it)."""
    if not uuid or uuid == "00000000-0000-0000-0000-000000000000":
        return False
    rc, _ = ceph_command(["config-key", "exists", "dm-crypt/osd/%s/luks" % uuid], timeout)
    return rc == 0


def drain(p):
    timeout = p["cli_timeout"]
    started = time.time()
    states = osd_states(timeout)
    todo = [o["id"] for o in p["osds"] if "destroyed" not in (states.get(o["id"], {}).get("state") or [])]
    steps, marked = [], []
    if not todo:
        return False, [step("Already destroyed: nothing to drain", started)], None
    if checking():
        going_out = [i for i in todo if int(states[i].get("in", 0) or 0)]
        if going_out:
            steps.append(step("%s would be marked out: its data would move to the other OSDs" % ", ".join("osd." + i for i in going_out), started, changed=True))
        ok, words = safe_to_destroy(todo, timeout)
        if ok:
            steps.append(step("Ceph says %s may be destroyed (%s)" % (", ".join("osd." + i for i in todo), words), started))
            return bool(going_out), steps, None
        return bool(going_out), steps, "Ceph says now that %s may not be destroyed (%s); %s" % (
            ", ".join("osd." + i for i in todo), words,
            "they are still in: whether their data can move elsewhere once they are marked out is known only after a real run" if going_out
            else "a real run would wait up to %d s for their data to be safe elsewhere" % p["safe_to_destroy_timeout"])
    for i in todo:
        if int(states[i].get("in", 0) or 0):
            rc, said = ceph_command(["config-key", "set", MARK + i, "%d out" % time.time()], timeout)
            if rc != 0:
                raise Refused("cannot mark the replacement of osd.%s: %s" % (i, tail(said)))
            rc, said = ceph_command(["osd", "out", i], timeout)
            if rc != 0:
                raise Refused("ceph osd out %s: %s" % (i, tail(said)))
            marked.append(i)
    if marked:
        steps.append(step("%s marked out: its data moves to the other OSDs" % ", ".join("osd." + i for i in marked), started, changed=True))
    streak = [0]

    def twice():
        ok, words = safe_to_destroy(todo, timeout)
        streak[0] = streak[0] + 1 if ok else 0
        return streak[0] >= 2, words

    ok, words, waited = wait_until(twice, p["safe_to_destroy_timeout"], 3)
    if not ok:
        for i in marked:
            ceph_command(["osd", "in", i], timeout)
            ceph_command(["config-key", "rm", MARK + i], timeout)
        _, stat = pgs_clean(timeout)
        raise Refused("Ceph does not say %s may be destroyed (asked for %d s): %s; PGs: %s%s" % (
            ", ".join("osd." + i for i in todo), waited, words, stat, "; marked in again" if marked else ""))
    steps.append(step("Ceph says %s may be destroyed (%s), after %.0f s" % (", ".join("osd." + i for i in todo), words, waited), started))
    return bool(marked), steps, None


def undrain(p):
    """After a failed or canceled run: the OSDs Carapace marked out that are still up (not
    stopped yet) are marked in again; the others stay for a rerun to finish."""
    timeout = p["cli_timeout"]
    started = time.time()
    rc, data, _ = ceph_json(["config-key", "dump", MARK], timeout)
    marked = [k[len(MARK):] for k in (data or {}) if k.startswith(MARK)] if rc == 0 and isinstance(data, dict) else []
    states = osd_states(timeout)
    back_in = [i for i in marked if i in [o["id"] for o in p["osds"]] and int(states.get(i, {}).get("up", 0) or 0)
               and "destroyed" not in (states.get(i, {}).get("state") or [])]
    for i in back_in if not checking() else []:
        ceph_command(["osd", "in", i], timeout)
        ceph_command(["config-key", "rm", MARK + i], timeout)
    if back_in and checking():
        return True, [step("%s would be marked in again" % ", ".join("osd." + i for i in back_in), started, changed=True)]
    if back_in:
        return True, [step("%s marked in again" % ", ".join("osd." + i for i in back_in), started, changed=True)]
    return False, [step("No OSD to mark in again", started)]


def destroy(p):
    timeout = p["cli_timeout"]
    started = time.time()
    states = osd_states(timeout)
    todo = [o["id"] for o in p["osds"] if "destroyed" not in (states.get(o["id"], {}).get("state") or [])]
    if not todo:
        return False, [step("Already destroyed", started)]
    if checking():
        return True, [step("%s would be marked down and destroyed: id, CRUSH place and weight kept" % ", ".join("osd." + i for i in todo), started, changed=True)]
    ceph_command(["osd", "down"] + todo, timeout)

    def down():
        now = osd_states(timeout)
        up = [i for i in todo if int(now.get(i, {}).get("up", 0) or 0)]
        return not up, "up again: %s" % ", ".join(up) if up else "down"

    ok, words, _ = wait_until(down, min(60, p["daemon_timeout"]), 2)
    if not ok:
        raise Refused("the OSDs came up again after their stop (%s): something restarts them" % words)
    for i in todo:
        rc, said = ceph_command(["osd", "destroy", i], timeout)
        if rc != 0:
            raise Refused("ceph osd destroy %s refused: %s" % (i, tail(said, 5)))
    now = osd_states(timeout)
    left = [i for i in todo if "destroyed" not in (now.get(i, {}).get("state") or [])]
    if left:
        raise Refused("not destroyed after ceph osd destroy: %s" % ", ".join(left))
    return True, [step("%s destroyed: id, CRUSH place and weight kept" % ", ".join("osd." + i for i in todo), started, changed=True)]


def back(p):
    timeout = p["cli_timeout"]
    started = time.time()
    ids = [o["id"] for o in p["osds"]]
    steps = []
    if checking():
        return steps, "nothing is replaced in check mode: whether %s come back up and in on the new devices, and the PGs clean, is known only after a real run" % (
            ", ".join("osd." + i for i in ids))

    def up_and_in():
        now = osd_states(timeout)
        bad = [i for i in ids if not (int(now.get(i, {}).get("up", 0) or 0) and int(now.get(i, {}).get("in", 0) or 0)
                                     and int(now.get(i, {}).get("up_from", 0) or 0) > int(p["before"].get(i, 0) or 0))]
        return not bad, "not up and in yet: %s" % ", ".join("osd." + i for i in bad) if bad else "up and in"

    ok, words, waited = wait_until(up_and_in, p["daemon_timeout"], 2)
    if not ok:
        raise Refused("the new OSDs are not up and in after %d s: %s" % (waited, words))
    steps.append(step("%s up and in on the new device after %.1f s" % (", ".join("osd." + i for i in ids), waited), started))
    tree = ceph_required(["osd", "tree"], timeout)
    weights = dict((str(n.get("id")), float(n.get("crush_weight", 0) or 0)) for n in tree.get("nodes", []) if n.get("type") == "osd")
    for i in ids:
        size = int(p["sizes"].get(i, 0) or 0)
        wanted = round(size / TIB, 5)
        if size and weights.get(i) is not None and abs(weights[i] - wanted) > 0.02 * max(wanted, 1e-9):
            rc, said = ceph_command(["osd", "crush", "reweight", "osd." + i, "%.5f" % wanted], timeout)
            if rc != 0:
                raise Refused("ceph osd crush reweight osd.%s %.5f: %s" % (i, wanted, tail(said)))
            steps.append(step("osd.%s CRUSH weight %.5f → %.5f (the new device's size)" % (i, weights[i], wanted), started, changed=True))
    clean_started = time.time()
    ok, words, waited = wait_until(lambda: pgs_clean(timeout), p["clean_timeout"], 2)
    if not ok:
        raise Refused("PGs not all active+clean after %d s (the data may still be moving to the new OSDs): %s" % (waited, words))
    steps.append(step("Every PG active+clean after %.1f s" % waited, clean_started))
    for i in ids:
        ceph_command(["config-key", "rm", MARK + i], timeout)
    return steps, None


# ---------------------------------------------------------------- on the OSDs' host


def stop(p):
    started = time.time()
    ids = [o["id"] for o in p["osds"]]
    units = ["ceph-osd@%s.service" % i for i in ids]
    activation = osd_activation_units(ids)
    # Read before the directories are unmounted: what each OSD's block sits on (lvm OSDs).
    chains = dict((i, osd_device_mapper_chain(i)) for i in ids)
    if checking():
        return [step("%s would be stopped and disabled%s%s" % (", ".join(units), "; %s disabled" % ", ".join(activation) if activation else "",
                                                             "".join("; osd.%s's device-mapper devices %s closed" % (i, ", ".join(c)) for i, c in chains.items() if c)),
                     started, changed=True)]
    rc, out, err = run(["systemctl", "disable", "--now"] + units + activation, timeout=p["daemon_timeout"])
    if rc != 0:
        raise Refused("systemctl disable --now %s: %s" % (" ".join(units + activation), tail(err or out)))
    run(["systemctl", "reset-failed"] + units, timeout=60)
    for i in ids:
        path = "/var/lib/ceph/osd/ceph-%s" % i
        if os.path.ismount(path):
            run(["umount", path], timeout=60)
    steps = [step("%s stopped and disabled%s" % (", ".join(units), "; %s disabled" % ", ".join(activation) if activation else ""), started, changed=True)]
    # The old disk's device-mapper devices (its dm-crypt mapping, its logical volume) would stay
    # open on a disk that failed or is about to be pulled: closed here, the disk left as it is.
    for i in ids:
        removed, problems = remove_device_mapper_chain(chains[i])
        if removed or problems:
            steps.append(step("osd.%s: the old disk's device-mapper devices %s%s" % (
                i, "closed: %s" % ", ".join(removed) if removed else "not closed",
                "; still open: %s" % "; ".join(problems) if problems else ""), started, changed=bool(removed)))
    return steps


def device_size(device):
    rc, out, _ = run(["blockdev", "--getsize64", device], timeout=30)
    return int(out.strip()) if rc == 0 and out.strip().isdigit() else 0


def create(p):
    started = time.time()
    if p["dmcrypt"] and p["osd_mode"] != "lvm":
        raise Refused("encrypted OSDs need ceph-volume lvm, which needs device-mapper: this host has none")
    steps, sizes, changed = [], {}, False
    for osd in p["osds"]:
        i, device = osd["id"], osd["device"]
        if not os.path.exists(device):
            raise Refused("osd.%s: the new device %s does not exist on this host" % (i, device))
        found = scan(p["osd_mode"], p["fsid"], [device], without_tools=checking())[0]
        if found["state"] == "ours" and str(found["osd_id"]) == i:
            steps.append(step("osd.%s: %s holds it already (an earlier run made it)" % (i, device), started))
        elif found["state"] == "ours":
            raise Refused("osd.%s: %s holds osd.%s of this cluster: it is not a new device" % (i, device, found["osd_id"]))
        elif checking():
            if found["state"] != "free" and not p["wipe"]:
                raise Refused("osd.%s: %s is not empty (%s); give wipe_devices: true to wipe it" % (i, device, found["detail"]))
            if found["state"] != "free":
                steps.append(step("osd.%s: %s would be wiped (it holds %s)" % (i, device, found["detail"]), started, changed=True))
            steps.append(step("osd.%s would be made again on %s (ceph-volume %s)" % (i, device, "raw prepare" if p["osd_mode"] == "raw" else "lvm create"), started, changed=True))
            changed = True
            sizes[i] = device_size(device)
            continue
        else:
            if found["state"] != "free":
                if not p["wipe"]:
                    raise Refused("osd.%s: %s is not empty (%s); give wipe_devices: true to wipe it" % (i, device, found["detail"]))
                rc, out, err = run(["ceph-volume", "lvm", "zap", device], timeout=600)
                if rc != 0:
                    raise Refused("ceph-volume lvm zap %s: %s" % (device, tail(err or out)))
                steps.append(step("osd.%s: %s wiped (it held %s)" % (i, device, found["detail"]), started, changed=True))
            path = "/var/lib/ceph/osd/ceph-%s" % i
            if os.path.isdir(path) and not os.path.ismount(path):
                shutil.rmtree(path)
            if p["osd_mode"] == "raw":
                argv = ["ceph-volume", "raw", "prepare", "--bluestore", "--osd-id", i, "--data", device, "--no-tmpfs"]
            else:
                argv = ["ceph-volume", "lvm", "create", "--bluestore", "--osd-id", i, "--data", device] + (["--dmcrypt"] if p["dmcrypt"] else [])
            rc, out, err = run(argv, timeout=600)
            if rc != 0:
                raise Refused("osd.%s: %s failed: %s" % (i, " ".join(argv), tail(err or out, 8)))
            changed = True
            steps.append(step("osd.%s made again on %s (%s)" % (i, device, " ".join(argv[1:3])), started, changed=True))
        unit = "ceph-osd@%s.service" % i
        if checking():
            _, enabled, _ = run(["systemctl", "is-enabled", unit], timeout=60)
            _, active, _ = run(["systemctl", "is-active", unit], timeout=60)
            if enabled.strip() != "enabled" or active.strip() != "active":
                steps.append(step("%s would be enabled and started" % unit, started, changed=True))
                changed = True
            sizes[i] = device_size(device)
            continue
        rc, out, err = run(["systemctl", "enable", "--now", unit], timeout=p["daemon_timeout"])
        if rc != 0:
            raise Refused("systemctl enable --now %s: %s" % (unit, tail(err or out)))
        sizes[i] = device_size(device)
    return changed, sizes, steps


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", required=True, choices=["locate", "drain", "undrain", "stop", "destroy", "create", "back"]),
            osds=dict(type="list", elements="dict", required=True),
            host=dict(type="str", default=""),
            fsid=dict(type="str", default=""),
            osd_mode=dict(type="str", default="raw", choices=["raw", "lvm"]),
            dmcrypt=dict(type="bool", default=False),
            wipe=dict(type="bool", default=False),
            before=dict(type="dict", default={}),
            sizes=dict(type="dict", default={}),
            safe_to_destroy_timeout=dict(type="int", default=600),
            daemon_timeout=dict(type="int", default=600),
            clean_timeout=dict(type="int", default=900),
            cli_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    check_mode(module)
    osds = []
    for osd in p["osds"]:
        i, device = str(osd.get("id", "")), str(osd.get("device", ""))
        if not re.match(r"^\d+$", i) or not re.match(r"^/dev/[A-Za-z0-9/_.:+-]+$", device) or ".." in device:
            module.fail_json(msg="osds must be [{id: N, device: /dev/...}], got %r" % osd)
        osds.append({"id": i, "device": device})
    p["osds"] = osds
    if p["mode"] in MONITOR_MODES:
        # many short questions to the cluster: one librados connection, not a ceph process each
        use_librados(p["cli_timeout"])
    try:
        mode = p["mode"]
        if mode == "locate":
            module.exit_json(changed=False, osds=locate(p))
        if mode == "drain":
            changed, steps, unknown = drain(p)
            module.exit_json(changed=changed, carapace_steps=steps, **({UNKNOWN: unknown} if unknown else {}))
        if mode == "stop":
            module.exit_json(changed=True, carapace_steps=stop(p))
        if mode == "undrain":
            changed, steps = undrain(p)
            module.exit_json(changed=changed, carapace_steps=steps)
        if mode == "destroy":
            changed, steps = destroy(p)
            module.exit_json(changed=changed, carapace_steps=steps)
        if mode == "create":
            changed, sizes, steps = create(p)
            module.exit_json(changed=changed, sizes=sizes, carapace_steps=steps)
        steps, unknown = back(p)
        module.exit_json(changed=False, carapace_steps=steps, **({UNKNOWN: unknown} if unknown else {}))
    except (Refused, ToolMissing) as err:
        module.fail_json(msg=str(err))


if __name__ == "__main__":
    main()
