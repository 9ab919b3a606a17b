#!/usr/bin/python3
# Carapace: the OSDs of one host in one round trip. The raw devices of a host are prepared
# at once (one ceph-volume per device, in parallel): most of an OSD's making is ceph-volume's
# own start-up and ceph-osd --mkfs, which do not wait on each other.
"""Make BlueStore OSDs on a host's devices with ceph-volume, and start them."""

DOCUMENTATION = r"""
module: carapace_ceph_osds
short_description: Makes and starts the OSDs of a host
description:
  - Installs the OSD bootstrap keyring and a drop-in of ceph-osd@.service that gives a raw
    OSD's device to ceph when the OSD starts (ceph-volume chowned it, a reboot gives it back
    to root).
  - Looks at each device (module_utils/carapace_ceph_devices.py). A device that already holds
    an OSD of this cluster is left alone; if any holds anything else (another cluster's OSD,
    a file system, a partition table, an interrupted prepare) nothing is written and the
    module fails naming them.
  - raw mode (no device-mapper): ceph-volume raw prepare --bluestore --no-tmpfs on every free
    device at once, then ceph-osd@ID enabled and started. lvm mode: ceph-volume lvm create
    (--dmcrypt when asked) one device after the other (LVM's metadata lock serializes them
    anyway), which enables the OSD's activation unit; then ceph-osd@ID is made sure to run.
  - Returns osds, one entry per device (device, state, osd_id, detail). No key is returned.
  - Check mode changes nothing: it looks at the devices for real (a device that is not free
    fails as in a real run), reports the OSDs it would prepare (would_change) and whether the
    keyring, the drop-in and the units would change. Where the Ceph tools are not installed
    yet (a new host), a device with any signature is reported unknown (check_mode_unknown):
    only they can tell an OSD of this cluster.
options:
  fsid: {type: str, required: true}
  devices: {type: list, elements: str, required: true}
  mode: {type: str, required: true, choices: [raw, lvm]}
  dmcrypt: {type: bool, default: false}
  bootstrap_keyring: {type: str, required: true, no_log: true}
  timeout: {type: int, default: 600, description: bound of each ceph-volume call (seconds)}
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import (
    UNKNOWN,
    CommandError,
    check_mode,
    check_result,
    daemon_reload,
    ensure_dir,
    run,
    start_all,
    systemd_running,
    tail,
    would,
    write_file,
)
from ansible.module_utils.carapace_ceph_devices import ToolMissing, scan

DROPIN_DIR = "/etc/systemd/system/ceph-osd@.service.d"
DROPIN = """# Written by Carapace.
# A raw OSD's device is owned by root again after a reboot (ceph-volume chowned it when it
# prepared the OSD); the OSD runs as ceph and must open it.
[Service]
ExecStartPre=-+/bin/chown --dereference ceph:ceph /var/lib/ceph/osd/ceph-%i/block
"""


def main():
    module = AnsibleModule(
        argument_spec=dict(
            fsid=dict(type="str", required=True),
            devices=dict(type="list", elements="str", required=True),
            mode=dict(type="str", required=True, choices=["raw", "lvm"]),
            dmcrypt=dict(type="bool", default=False),
            bootstrap_keyring=dict(type="str", required=True, no_log=True),
            timeout=dict(type="int", default=600),
        ),
        supports_check_mode=True,
    )
    p = module.params
    checking = check_mode(module)
    changed = False
    try:
        changed |= ensure_dir("/var/lib/ceph/bootstrap-osd", 0o755, "ceph", "ceph")
        changed |= write_file("/var/lib/ceph/bootstrap-osd/ceph.keyring", p["bootstrap_keyring"].strip() + "\n", 0o600, "ceph", "ceph", secret=True)
        changed |= ensure_dir(DROPIN_DIR, 0o755)
        if write_file(os.path.join(DROPIN_DIR, "carapace-block-owner.conf"), DROPIN, 0o644):
            daemon_reload()
            changed = True

        report = scan(p["mode"], p["fsid"], p["devices"], without_tools=checking)
        refused = ["%s: %s" % (r["device"], r["detail"]) for r in report if r["state"] in ("foreign", "incomplete")]
        if refused:
            module.fail_json(msg="these devices are not free, nothing was written to them: %s" % "; ".join(refused), osds=report, changed=changed)

        free = [r["device"] for r in report if r["state"] == "free"]
        if checking:
            for device in free:
                would("prepare a BlueStore OSD on %s (ceph-volume %s%s), enable and start it" % (
                    device, "raw prepare" if p["mode"] == "raw" else "lvm create", " --dmcrypt" if p["dmcrypt"] and p["mode"] == "lvm" else ""))
            ours = [r for r in report if r["state"] == "ours"]
            units = ["ceph-osd@%d.service" % r["osd_id"] for r in ours]
            if units:
                changed |= systemd_running((["ceph-osd.target"] if p["mode"] == "raw" else []) + units, enable=p["mode"] == "raw")
            elif free and p["mode"] == "raw":
                changed |= systemd_running(["ceph-osd.target"])
            unknown = ["%s: %s" % (r["device"], r["detail"]) for r in report if r["state"] == "unknown"]
            result = check_result(changed=changed or bool(free), osds=report, would_prepare=free)
            if unknown:
                result[UNKNOWN] = "cannot tell what these devices hold before the Ceph packages are installed: %s" % "; ".join(unknown)
            module.exit_json(**result)
        if free:
            if p["mode"] == "raw":
                done = start_all([["ceph-volume", "raw", "prepare", "--bluestore", "--data", d, "--no-tmpfs"] for d in free], p["timeout"])
            else:
                done = []
                for d in free:
                    argv = ["ceph-volume", "lvm", "create", "--bluestore", "--data", d] + (["--dmcrypt"] if p["dmcrypt"] else [])
                    rc, out, err = run(argv, timeout=p["timeout"])
                    done.append((argv, rc, out, err))
            changed = True
            failed = ["%s: ceph-volume exited with %s: %s" % (argv[5], rc, tail(err or out, 8)) for argv, rc, out, err in done if rc != 0]
            report = scan(p["mode"], p["fsid"], p["devices"])
            if failed:
                module.fail_json(msg="ceph-volume failed: %s" % "\n".join(failed), osds=report, changed=True)

        missing = [r["device"] for r in report if r["state"] != "ours"]
        if missing:
            module.fail_json(msg="no OSD of this cluster on %s after ceph-volume" % ", ".join(missing), osds=report, changed=changed)

        units = ["ceph-osd@%d.service" % r["osd_id"] for r in report]
        if p["mode"] == "raw":
            changed |= systemd_running(["ceph-osd.target"] + units)
        else:
            # ceph-volume lvm create enabled ceph-volume@lvm-ID-UUID, which mounts the OSD
            # directory and starts ceph-osd@ID at boot
            changed |= systemd_running(units, enable=False)
    except (CommandError, ToolMissing) as err:
        module.fail_json(msg=str(err), changed=changed)
    module.exit_json(changed=changed, osds=report)


if __name__ == "__main__":
    main()
