#!/usr/bin/python3
# Carapace: the OSDs a host holds, for the remove_osd playbook.
#
#   ceph-osd-local.py FSID
#
# Prints a JSON list, one object per OSD directory /var/lib/ceph/osd/ceph-N, by id:
#   {"id": 3, "path": "/var/lib/ceph/osd/ceph-3", "ours": true, "cluster": "<fsid>",
#    "block": "/dev/vdb" | null, "kind": "raw" | "lvm" | null, "labelled": true,
#    "mounted": false}
# - ours: the directory's ceph_fsid is FSID (only those are touched by the playbook);
# - block: where the directory's `block` link leads (its real path), if it exists;
# - kind: lvm when that is a device-mapper node (ceph-volume lvm, maybe dm-crypt), raw
#   for any other block device;
# - labelled: the device's BlueStore label names this OSD of FSID (whoami and ceph_fsid):
#   only such a device is wiped, so a second run, or a device already reused, is left alone;
# - mounted: the directory is a mount point (ceph-volume's tmpfs).
# The label's osd_key is never printed. Python 3 standard library only; run as root.
"""List the OSDs of a host."""

import json
import os
import re
import stat
import subprocess
import sys

OSD_ROOT = os.environ.get("CARAPACE_OSD_ROOT", "/var/lib/ceph/osd")


def read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return None


def label_names(device, osd_id, fsid):
    try:
        result = subprocess.run(["ceph-bluestore-tool", "show-label", "--dev", device], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    if result.returncode != 0:
        return False
    try:
        labels = json.loads(result.stdout)
    except ValueError:
        return False
    if not isinstance(labels, dict):
        return False
    label = labels.get(device) or next(iter(labels.values()), {})
    return label.get("ceph_fsid") == fsid and str(label.get("whoami")) == str(osd_id)


def block_of(path):
    link = os.path.join(path, "block")
    if not os.path.lexists(link):
        return None
    real = os.path.realpath(link)
    try:
        if not stat.S_ISBLK(os.stat(real).st_mode):
            return None
    except OSError:
        return None
    return real


def main(argv):
    if len(argv) != 1:
        sys.exit("usage: ceph-osd-local.py FSID")
    fsid = argv[0]
    osds = []
    try:
        names = os.listdir(OSD_ROOT)
    except FileNotFoundError:
        names = []
    for name in names:
        match = re.fullmatch(r"ceph-(\d+)", name)
        path = os.path.join(OSD_ROOT, name)
        if not match or not os.path.isdir(path) or os.path.islink(path):
            continue
        osd_id = int(match.group(1))
        cluster = read(os.path.join(path, "ceph_fsid"))
        block = block_of(path)
        kind = None
        if block is not None:
            kind = "lvm" if os.path.basename(block).startswith("dm-") else "raw"
        osds.append({
            "id": osd_id,
            "path": path,
            "ours": cluster == fsid,
            "cluster": cluster,
            "block": block,
            "kind": kind,
            "labelled": block is not None and cluster == fsid and label_names(block, osd_id, fsid),
            "mounted": os.path.ismount(path),
        })
    osds.sort(key=lambda osd: osd["id"])
    json.dump(osds, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
