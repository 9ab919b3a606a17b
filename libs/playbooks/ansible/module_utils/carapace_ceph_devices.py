#!/usr/bin/python3
# Carapace: what each given device holds, for the carapace_ceph_osds module (scan()), and
# as a command for tests and operators:
#
#   python3 carapace_ceph_devices.py raw|lvm FSID DEVICE...
#
# scan() returns (and the command prints as JSON) a list, one object per device, in the
# order given:
#   {"device": "/dev/vdb", "state": "free" | "ours" | "foreign" | "incomplete",
#    "osd_id": 3 | null, "detail": "..."}
# - ours: an OSD of the cluster FSID (a BlueStore label, or ceph-volume lvm tags, naming it);
# - foreign: anything else on it (another cluster's OSD, a filesystem, a partition table,
#   an LVM physical volume...): never touched;
# - incomplete: a label of this cluster without an OSD id (an interrupted prepare);
# - free: no signature at all.
# Secrets that ceph-bluestore-tool and ceph-volume print (osd_key, lockbox secrets) are
# never printed. Python 3 standard library only; run as root.
"""Report whether devices hold an OSD of a cluster."""

import json
import os
import subprocess
import sys


class ToolMissing(Exception):
    """A tool the scan needs is not installed."""


def run(argv):
    try:
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    except FileNotFoundError as err:
        raise ToolMissing("%s: %s" % (argv[0], err)) from err


def signature(device):
    """The first signature blkid finds on the device (TYPE or PTTYPE), or None."""
    result = run(["blkid", "-p", "-o", "export", device])
    if result.returncode == 2:
        return None
    if result.returncode != 0:
        return "unreadable (blkid: %s)" % (result.stderr.strip() or result.returncode)
    values = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    return values.get("TYPE") or values.get("PTTYPE") or "unknown"


def whoami(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def raw_state(device, fsid):
    result = run(["ceph-bluestore-tool", "show-label", "--dev", device])
    if result.returncode == 0:
        try:
            labels = json.loads(result.stdout)
        except ValueError:
            labels = {}
        if not isinstance(labels, dict):
            labels = {}
        label = labels.get(device) or next(iter(labels.values()), {})
        label_fsid = label.get("ceph_fsid")
        if label_fsid != fsid:
            return {"state": "foreign", "osd_id": None, "detail": "a BlueStore OSD of cluster %s" % label_fsid}
        osd_id = whoami(label.get("whoami"))
        if osd_id is None:
            return {"state": "incomplete", "osd_id": None, "detail": "a BlueStore label of this cluster without an OSD id"}
        return {"state": "ours", "osd_id": osd_id, "detail": "osd.%d" % osd_id}
    found = signature(device)
    if found is None:
        return {"state": "free", "osd_id": None, "detail": "no signature"}
    return {"state": "foreign", "osd_id": None, "detail": "holds %s" % found}


def lvm_osds():
    """real device path -> (osd id, cluster fsid) of the block volumes ceph-volume lvm knows."""
    result = run(["ceph-volume", "lvm", "list", "--format", "json"])
    if result.returncode != 0:
        return {}
    try:
        listing = json.loads(result.stdout)
    except ValueError:
        return {}
    found = {}
    for osd_id, volumes in listing.items():
        for volume in volumes:
            if volume.get("type") != "block":
                continue
            tags = volume.get("tags", {})
            for dev in volume.get("devices", []):
                found[os.path.realpath(dev)] = (whoami(tags.get("ceph.osd_id", osd_id)), tags.get("ceph.cluster_fsid"))
    return found


def lvm_state(device, fsid, known):
    entry = known.get(os.path.realpath(device))
    if entry is not None:
        osd_id, cluster = entry
        if cluster != fsid:
            return {"state": "foreign", "osd_id": None, "detail": "an OSD (lvm) of cluster %s" % cluster}
        return {"state": "ours", "osd_id": osd_id, "detail": "osd.%s (lvm)" % osd_id}
    found = signature(device)
    if found is None:
        return {"state": "free", "osd_id": None, "detail": "no signature"}
    return {"state": "foreign", "osd_id": None, "detail": "holds %s" % found}


def scan(mode, fsid, devices, without_tools=False):
    """What each device holds: [{"device", "state", "osd_id", "detail"}], in the given order.
    without_tools (check mode, where the Ceph packages are not installed yet): when
    ceph-bluestore-tool or ceph-volume is missing, a device without any signature is free and
    one with a signature is "unknown" (only the Ceph tools can tell whether it is an OSD of
    this cluster), instead of raising ToolMissing."""
    try:
        known = lvm_osds() if mode == "lvm" else {}
        report = []
        for device in devices:
            state = raw_state(device, fsid) if mode == "raw" else lvm_state(device, fsid, known)
            report.append(dict(device=device, **state))
        return report
    except ToolMissing as err:
        if not without_tools:
            raise
        missing = str(err).split(":")[0]
    report = []
    for device in devices:
        found = signature(device)
        if found is None:
            report.append({"device": device, "state": "free", "osd_id": None, "detail": "no signature"})
        else:
            report.append({"device": device, "state": "unknown", "osd_id": None,
                           "detail": "holds %s; %s is not installed yet to tell whether it is an OSD of this cluster" % (found, missing)})
    return report


def main(argv):
    if len(argv) < 3 or argv[0] not in ("raw", "lvm"):
        sys.exit("usage: carapace_ceph_devices.py raw|lvm FSID DEVICE...")
    json.dump(scan(argv[0], argv[1], argv[2:]), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except ToolMissing as err:
        sys.exit(str(err))
