#!/usr/bin/python3
# Carapace: the devices of a host that hold an OSD of one cluster, for purge_cluster.
#
#   ceph-purge-devices.py FSID          report
#   ceph-purge-devices.py FSID --wipe   wipe the raw OSD devices of FSID, then report
#
# Candidates: every block device node in /dev (top level, and /dev/mapper) and whatever the
# block, block.db and block.wal links of /var/lib/ceph/osd/*/ point to. Each candidate's
# first 4 KiB are read; a BlueStore label ("bluestore block device") is decoded here (no Ceph
# tool needed, so this works before and after the packages are removed). A device is OURS
# only when its label names the cluster FSID (or, for a DB/WAL label without ceph_fsid, the
# uuid of an OSD whose main label does): nothing else is ever written to.
#
# --wipe zeroes, on each OURS device that is not a device-mapper device, the first 10 MiB
# (the label and BlueFS superblock, what `ceph-volume lvm zap` zeroes) and the 4 KiB at
# 1, 10, 100 and 1000 GiB within the device (where newer Ceph releases keep copies of the
# label), opened O_EXCL (refused while mounted or held), then gives the node back to
# root:disk (ceph-volume gave it to ceph). LVM/dm-crypt OSDs (device-mapper devices) are
# reported, not written: `ceph-volume lvm zap --destroy` removes them with their volumes.
#
# Prints one JSON object: {"devices": [{"device", "rdev", "state", "osd_id", "dm",
# "detail", "wiped"}...], "lvm": [...], "lvm_error", "failures": [...]}; state "ours",
# "foreign" (a label of another cluster) or "unreadable". Devices without a BlueStore label
# are not listed. "lvm": the OSD volumes `ceph-volume lvm list` knows (osd_id, osd_fsid,
# cluster, lv_path, devices), where device-mapper exists and ceph-volume is installed. Exit
# 1 when a wipe failed (the reasons in "failures"). The label's osd_key (a secret) is never
# printed. Python 3 standard library only; run as root.
"""Find (and wipe) the BlueStore devices of one Ceph cluster on this host."""

import glob
import grp
import json
import os
import re
import stat
import struct
import subprocess
import sys

MAGIC = b"bluestore block device\n"
LABEL_BYTES = 4096
WIPE_HEAD = 10 * 1024 * 1024
LABEL_COPIES = [1 << 30, 10 << 30, 100 << 30, 1000 << 30]
# A floppy or an optical drive cannot hold an OSD, and reading one may block.
SKIP = re.compile(r"^(fd[0-9]|sr[0-9]|st[0-9]|nst[0-9])")
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


class Reader:
    def __init__(self, data, at):
        self.data = data
        self.at = at

    def take(self, n):
        if n < 0 or self.at + n > len(self.data):
            raise ValueError("label truncated")
        chunk = self.data[self.at:self.at + n]
        self.at += n
        return chunk

    def u8(self):
        return self.take(1)[0]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def string(self):
        return self.take(self.u32()).decode("utf-8", "replace")


def decode_label(data):
    """The fields of a BlueStore label (bluestore_bdev_label_t), or None if there is none.

    Layout: MAGIC, the OSD uuid as text and a newline, then ENCODE_START(v, compat, len),
    osd_uuid (16 bytes), size (u64), btime (2 x u32), description (string), meta
    (map<string, string>: ceph_fsid, whoami, osd_key, ...).
    """
    if not data.startswith(MAGIC):
        return None
    r = Reader(data, len(MAGIC) + 36 + 1)
    r.u8()  # struct_v
    r.u8()  # struct_compat
    r.u32()  # struct_len
    raw_uuid = r.take(16).hex()
    osd_uuid = "%s-%s-%s-%s-%s" % (raw_uuid[0:8], raw_uuid[8:12], raw_uuid[12:16], raw_uuid[16:20], raw_uuid[20:32])
    r.take(8)  # size
    r.take(8)  # btime
    description = r.string()
    meta = {}
    count = r.u32()
    if count > 1024:
        raise ValueError("label meta too large")
    for _ in range(count):
        key = r.string()
        meta[key] = r.string()
    return {"osd_uuid": osd_uuid, "description": description, "meta": meta}


def dm_major():
    try:
        with open("/proc/devices", encoding="ascii") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1] == "device-mapper":
                    return int(parts[0])
    except OSError:
        pass
    return None


def candidates():
    """Block devices to look at: device number -> (the first name found, named by an OSD directory)."""
    paths = sorted(p for p in glob.glob("/dev/*") + glob.glob("/dev/mapper/*") if not SKIP.match(os.path.basename(p)))
    linked = set()
    for pattern in ("/var/lib/ceph/osd/*/block", "/var/lib/ceph/osd/*/block.db", "/var/lib/ceph/osd/*/block.wal"):
        linked.update(os.path.realpath(p) for p in glob.glob(pattern))
    seen = {}
    for path in paths + sorted(linked):
        try:
            st = os.stat(path)
        except OSError:
            continue
        if not stat.S_ISBLK(st.st_mode):
            continue
        name, from_osd = seen.get(st.st_rdev, (path, False))
        seen[st.st_rdev] = (name, from_osd or path in linked)
    return seen


def read_label(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as err:
        return None, "cannot open: %s" % err.strerror
    try:
        data = os.pread(fd, LABEL_BYTES, 0)
    except OSError as err:
        return None, "cannot read: %s" % err.strerror
    finally:
        os.close(fd)
    try:
        return decode_label(data), None
    except (ValueError, struct.error) as err:
        return None, "a BlueStore label that cannot be read (%s)" % err


def wipe(path):
    fd = os.open(path, os.O_WRONLY | os.O_EXCL | os.O_CLOEXEC)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        zeros = bytes(1024 * 1024)
        for at in range(0, min(WIPE_HEAD, size), len(zeros)):
            os.pwrite(fd, zeros[:min(len(zeros), size - at)], at)
        for at in LABEL_COPIES:
            if at + LABEL_BYTES <= size:
                os.pwrite(fd, zeros[:LABEL_BYTES], at)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.chown(path, 0, grp.getgrnam("disk").gr_gid)
    except (KeyError, OSError):
        pass


def lvm_osds(dm):
    """The OSD volumes ceph-volume lvm knows (where device-mapper exists and ceph-volume is installed)."""
    if dm is None or not os.path.exists("/dev/mapper/control"):
        return [], None
    tool = next((t for t in ("/usr/sbin/ceph-volume", "/usr/bin/ceph-volume") if os.path.exists(t)), None)
    if tool is None:
        return [], None
    try:
        result = subprocess.run([tool, "lvm", "list", "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, timeout=300, check=False)
        listing = json.loads(result.stdout or "{}")
    except (OSError, subprocess.TimeoutExpired, ValueError) as err:
        return [], "ceph-volume lvm list failed: %s" % err
    if result.returncode != 0 and not listing:
        return [], "ceph-volume lvm list failed (exit %d): %s" % (result.returncode, result.stderr.strip()[-500:])
    osds = []
    for volumes in listing.values():
        for volume in volumes:
            tags = volume.get("tags", {})
            if volume.get("type") != "block" or not tags.get("ceph.osd_fsid"):
                continue
            osds.append({"osd_id": tags.get("ceph.osd_id"), "osd_fsid": tags.get("ceph.osd_fsid"),
                         "cluster": (tags.get("ceph.cluster_fsid") or "").lower(), "lv_path": volume.get("lv_path"),
                         "devices": volume.get("devices", []), "encrypted": tags.get("ceph.encrypted") == "1"})
    return osds, None


def blkid_finds(path):
    """What `blkid -p` still finds on the device ('' when nothing)."""
    try:
        result = subprocess.run(["blkid", "-p", "-o", "export", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return "blkid failed: %s" % err
    if result.returncode == 2:
        return ""
    return (result.stdout.strip().replace("\n", " ") or result.stderr.strip() or "exit %d" % result.returncode)


def main(argv):
    if len(argv) not in (1, 2) or not UUID.match(argv[0]) or (len(argv) == 2 and argv[1] != "--wipe"):
        sys.exit("usage: ceph-purge-devices.py FSID [--wipe]")
    fsid, do_wipe = argv[0].lower(), len(argv) == 2
    dm = dm_major()
    found = []
    for rdev, (path, from_osd) in sorted(candidates().items(), key=lambda item: item[1]):
        label, problem = read_label(path)
        if label is None and problem is None:
            continue
        if label is None and problem.startswith("cannot") and not from_osd:
            continue  # an empty drive, a disconnected nbd...: no OSD of an OSD directory
        entry = {"device": path, "rdev": "%d:%d" % (os.major(rdev), os.minor(rdev)),
                 "dm": dm is not None and os.major(rdev) == dm, "osd_id": None, "wiped": False}
        if label is None:
            entry.update(state="unreadable", detail=problem)
        else:
            meta = label["meta"]
            entry.update(osd_uuid=label["osd_uuid"], cluster=meta.get("ceph_fsid"), description=label["description"])
            whoami = meta.get("whoami", "")
            entry["osd_id"] = int(whoami) if whoami.isdigit() else None
        found.append(entry)
    ours_uuids = {e["osd_uuid"] for e in found if (e.get("cluster") or "").lower() == fsid}
    for e in found:
        if e.get("state") == "unreadable":
            continue
        cluster = (e.get("cluster") or "").lower()
        if cluster == fsid or (not cluster and e["osd_uuid"] in ours_uuids):
            e["state"] = "ours"
            e["detail"] = "osd.%s of this cluster (%s)" % (e["osd_id"] if e["osd_id"] is not None else "?", e["description"])
        else:
            e["state"] = "foreign"
            e["detail"] = "a BlueStore label of cluster %s, not touched" % (e.get("cluster") or "unknown")
    failures = []
    if do_wipe:
        for e in found:
            if e["state"] != "ours" or e["dm"]:
                continue
            try:
                wipe(e["device"])
            except OSError as err:
                failures.append("%s: cannot wipe: %s" % (e["device"], err.strerror))
                continue
            e["wiped"] = True
            left = blkid_finds(e["device"])
            if left:
                failures.append("%s: blkid still finds %s after the wipe" % (e["device"], left))
    lvm, lvm_error = lvm_osds(dm)
    json.dump({"devices": found, "lvm": lvm, "lvm_error": lvm_error, "failures": failures}, sys.stdout)
    sys.stdout.write("\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
