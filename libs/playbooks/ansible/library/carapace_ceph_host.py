#!/usr/bin/python3
# Carapace: the pre-flight of a Ceph host in one round trip (instead of fact gathering plus a
# task per check). Changes nothing.
"""Check a host before Carapace deploys Ceph daemons or OSDs on it."""

DOCUMENTATION = r"""
module: carapace_ceph_host
short_description: Checks a host before Ceph daemons or OSDs are made on it
description:
  - Returns the facts the Ceph roles use (hostname, os_family, distribution,
    distribution_release), whether the kernel has device-mapper, how OSDs are made on this
    host (raw or lvm) and which of the Ceph packages are missing.
  - Fails, listing every problem, when the host is not Debian-like, when a daemon host has no
    IPv4 address or plain host name, when an OSD device is not a distinct /dev path of a block
    device, or when dmcrypt (or lvm) is asked for without device-mapper. Changes nothing.
options:
  daemon_address: {type: str, description: the address of a monitor or manager host (checked when set)}
  osd_devices: {type: list, elements: str, description: the devices that become OSDs on this host (checked when set; at least one)}
  dmcrypt: {type: bool, default: false}
  osd_mode: {type: str, default: auto, choices: [auto, raw, lvm]}
  packages: {type: list, elements: str, default: []}
"""

import os
import re
import socket
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import run

DEVICE_PATH = re.compile(r"^/dev/[A-Za-z0-9][A-Za-z0-9/_.:-]*$")
IPV4 = re.compile(r"^[0-9]{1,3}(\.[0-9]{1,3}){3}$")
DAEMON_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")


def os_release():
    values = {}
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    if "=" in line:
                        key, value = line.rstrip("\n").split("=", 1)
                        values[key] = value.strip().strip('"')
            break
        except FileNotFoundError:
            continue
    return values


def device_mapper():
    """Both the kernel driver and its control node: /dev/mapper/control can exist (made by
    udev or lvm2) on a kernel without device-mapper, where opening it fails with ENODEV."""
    listed = False
    for path in ("/proc/misc", "/proc/devices"):
        try:
            with open(path, encoding="utf-8") as handle:
                if re.search(r"\bdevice-mapper\b", handle.read()):
                    listed = True
        except OSError:
            continue
    try:
        control = stat.S_ISCHR(os.stat("/dev/mapper/control").st_mode)
    except OSError:
        control = False
    return listed and control


def missing_packages(packages):
    if not packages:
        return []
    _, out, _ = run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}${Package}\n"] + list(packages), timeout=60)
    installed = {line[3:].strip() for line in out.splitlines() if line.startswith("ii ")}
    return [p for p in packages if p not in installed]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            daemon_address=dict(type="str"),
            osd_devices=dict(type="list", elements="str"),
            dmcrypt=dict(type="bool", default=False),
            osd_mode=dict(type="str", default="auto", choices=["auto", "raw", "lvm"]),
            packages=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    release = os_release()
    family_ids = [release.get("ID", "")] + release.get("ID_LIKE", "").split()
    facts = dict(
        hostname=socket.gethostname().split(".")[0],
        os_family="Debian" if "debian" in family_ids else (release.get("ID", "") or "unknown").capitalize(),
        distribution=release.get("NAME", release.get("ID", "unknown")),
        distribution_release=release.get("VERSION_CODENAME", ""),
    )
    dm = device_mapper()
    problems = []
    if facts["os_family"] != "Debian":
        problems.append("Carapace installs Ceph with apt; this host runs %s" % facts["distribution"])
    if p["daemon_address"] is not None and (not IPV4.match(p["daemon_address"]) or not DAEMON_NAME.match(facts["hostname"])):
        problems.append("a monitor needs an IPv4 address and a plain host name; this host has %s and %s" % (p["daemon_address"], facts["hostname"]))

    devices = p["osd_devices"]
    mode = None
    if devices is not None:
        bad = [d for d in devices if not DEVICE_PATH.match(d)]
        if not devices or bad or len(set(devices)) != len(devices):
            problems.append("carapace_osd_devices must be distinct /dev paths, got %s" % ", ".join(devices))
        else:
            not_block = []
            for device in devices:
                try:
                    if not stat.S_ISBLK(os.stat(device).st_mode):
                        not_block.append(device)
                except OSError:
                    not_block.append(device)
            if not_block:
                problems.append("not block devices: %s" % ", ".join(not_block))
        mode = ("lvm" if dm else "raw") if p["osd_mode"] == "auto" else p["osd_mode"]
        if p["dmcrypt"] and not dm:
            problems.append(
                "dmcrypt is requested but this host has no device-mapper (its kernel lists no device-mapper driver in "
                "/proc/misc or /proc/devices, or /dev/mapper/control is missing): dm-crypt cannot run there, so no "
                "encrypted OSD can be made. Deploy without dmcrypt, or on hosts with device-mapper."
            )
        elif mode == "lvm" and not dm:
            problems.append("ceph_osd_mode lvm needs device-mapper, which this host lacks")
        elif mode == "raw" and p["dmcrypt"]:
            problems.append("encrypted OSDs need ceph_osd_mode lvm (got raw)")

    result = dict(
        changed=False,
        ansible_facts=facts,
        device_mapper=dm,
        osd_mode=mode,
        packages_missing=missing_packages(p["packages"]),
    )
    if problems:
        module.fail_json(msg="%s: %s" % (facts["hostname"], "; ".join(problems)), problems=problems, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
