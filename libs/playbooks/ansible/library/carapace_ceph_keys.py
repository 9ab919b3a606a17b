#!/usr/bin/python3
# Carapace: the secrets and the initial monitor map of a new cluster, made once on its first
# monitor (ceph-authtool and monmaptool, on the host: no key is written on the runner).
"""Generate the keys and the initial monitor map of a new Ceph cluster."""

DOCUMENTATION = r"""
module: carapace_ceph_keys
short_description: Makes the keys and the initial monitor map of a new Ceph cluster
description:
  - On the first monitor: the client.admin key (/etc/ceph/ceph.client.admin.keyring), the
    client.bootstrap-osd key (/var/lib/ceph/bootstrap-osd/ceph.keyring), one key per manager,
    and the monitor keyring that holds mon. and imports all of them
    (/var/lib/ceph/tmp/ceph.mon.keyring), so that the monitors know every key from their
    first start and the managers can start before the quorum forms.
  - The initial monitor map (/var/lib/ceph/tmp/monmap, monmaptool) names every monitor with
    its v2 and v1 address, so that all of them start in one election.
  - What exists is kept (a second run changes nothing). Returns the files' contents for the
    other hosts (use no_log).
  - Check mode writes and generates nothing: it reports which keys, keyrings and the map it
    would make (would_change), returns those that exist (a deployed cluster: the same as a
    real run) and an empty string for each it would make (a key cannot be known before it is
    generated), and asks the cluster (ceph auth get, read only) for a manager's key the
    monitor keyring lacks.
options:
  fsid: {type: str, required: true}
  mon_names: {type: list, elements: str, required: true, description: the monitors' daemon ids}
  mon_addresses: {type: list, elements: str, required: true, description: their IPv4 addresses, in the same order}
  mgrs: {type: list, elements: str, default: [], description: manager daemon names}
"""

import base64
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import CommandError, ceph, check_mode, check_result, ensure_dir, ids, read_text, run, would

ADMIN = "/etc/ceph/ceph.client.admin.keyring"
BOOTSTRAP_OSD = "/var/lib/ceph/bootstrap-osd/ceph.keyring"
TMP = "/var/lib/ceph/tmp"
MON_KEYRING = TMP + "/ceph.mon.keyring"
MONMAP = TMP + "/monmap"
MGR_CAPS = ["--cap", "mon", "allow profile mgr", "--cap", "osd", "allow *", "--cap", "mds", "allow *"]


def authtool(args):
    run(["ceph-authtool"] + args, timeout=60, check=True)


def entity_key(keyring_text, entity):
    """The [entity] section of a keyring's text (with its caps), or None."""
    match = re.search(r"(?ms)^\[%s\]\n.*?(?=^\[|\Z)" % re.escape(entity), keyring_text or "")
    return match.group(0).rstrip("\n") + "\n" if match else None


def preview(module, p):
    """Check mode: what a real run would make, and what exists."""
    changed = ensure_dir(TMP, 0o755, "ceph", "ceph")
    changed |= ensure_dir(os.path.dirname(BOOTSTRAP_OSD), 0o755, "ceph", "ceph")
    for path, what in ((ADMIN, "the client.admin key"), (BOOTSTRAP_OSD, "the client.bootstrap-osd key"),
                       (MON_KEYRING, "the mon. key and the monitor keyring importing every key (with one key per manager)"),
                       (MONMAP, "the initial monitor map of %s" % ", ".join("%s [v2:%s:3300,v1:%s:6789]" % (n, a, a) for n, a in zip(p["mon_names"], p["mon_addresses"])))):
        if not os.path.exists(path):
            would("generate %s in %s" % (what, path))
            changed = True
    mon_keyring = read_text(MON_KEYRING)
    mgr_keyrings = {}
    for name in p["mgrs"]:
        section = entity_key(mon_keyring, "mgr." + name) if mon_keyring is not None else None
        if section is None and mon_keyring is not None:
            rc, out, _ = ceph(["auth", "get", "mgr." + name], check=False)
            if rc == 0 and out.strip():
                section = out.strip() + "\n"
            else:
                would("create the key of mgr.%s in the cluster (ceph auth get-or-create)" % name)
                changed = True
        mgr_keyrings[name] = section or ""
    monmap = ""
    if os.path.exists(MONMAP):
        with open(MONMAP, "rb") as handle:
            monmap = base64.b64encode(handle.read()).decode("ascii")
    module.exit_json(**check_result(
        changed=changed,
        admin_keyring=read_text(ADMIN) or "",
        bootstrap_osd_keyring=read_text(BOOTSTRAP_OSD) or "",
        mon_keyring=mon_keyring or "",
        mgr_keyrings=mgr_keyrings,
        monmap=monmap,
    ))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            fsid=dict(type="str", required=True),
            mon_names=dict(type="list", elements="str", required=True),
            mon_addresses=dict(type="list", elements="str", required=True),
            mgrs=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if len(p["mon_names"]) != len(p["mon_addresses"]) or not p["mon_names"]:
        module.fail_json(msg="mon_names and mon_addresses must be lists of the same length, not empty")
    if check_mode(module):
        preview(module, p)
    changed = False
    try:
        changed |= ensure_dir(TMP, 0o755, "ceph", "ceph")
        changed |= ensure_dir(os.path.dirname(BOOTSTRAP_OSD), 0o755, "ceph", "ceph")
        if not os.path.exists(ADMIN):
            authtool(["--create-keyring", ADMIN, "--gen-key", "-n", "client.admin",
                      "--cap", "mon", "allow *", "--cap", "osd", "allow *", "--cap", "mds", "allow *", "--cap", "mgr", "allow *"])
            os.chmod(ADMIN, 0o600)
            changed = True
        if not os.path.exists(BOOTSTRAP_OSD):
            authtool(["--create-keyring", BOOTSTRAP_OSD, "--gen-key", "-n", "client.bootstrap-osd",
                      "--cap", "mon", "profile bootstrap-osd", "--cap", "mgr", "allow r"])
            changed = True
        os.chown(BOOTSTRAP_OSD, *ids("ceph", "ceph"))
        os.chmod(BOOTSTRAP_OSD, 0o600)

        if not os.path.exists(MON_KEYRING):
            new = MON_KEYRING + ".new"
            if os.path.exists(new):
                os.unlink(new)
            authtool(["--create-keyring", new, "--gen-key", "-n", "mon.", "--cap", "mon", "allow *"])
            for name in p["mgrs"]:
                authtool([new, "--gen-key", "-n", "mgr." + name] + MGR_CAPS)
            authtool([new, "--import-keyring", ADMIN])
            authtool([new, "--import-keyring", BOOTSTRAP_OSD])
            os.chown(new, *ids("ceph", "ceph"))
            os.chmod(new, 0o600)
            os.rename(new, MON_KEYRING)
            changed = True
        mon_keyring = read_text(MON_KEYRING)

        # Managers the monitor keyring does not know (a cluster made before the managers were
        # added to it): the running cluster makes their key.
        mgr_keyrings = {}
        for name in p["mgrs"]:
            section = entity_key(mon_keyring, "mgr." + name)
            if section is None:
                _, out, _ = ceph(["auth", "get-or-create", "mgr." + name, "mon", "allow profile mgr", "osd", "allow *", "mds", "allow *"])
                section = out.strip() + "\n"
            mgr_keyrings[name] = section

        if not os.path.exists(MONMAP):
            new = MONMAP + ".new"
            argv = ["monmaptool", "--create", "--clobber", "--fsid", p["fsid"], "--enable-all-features", "--set-min-mon-release", "pacific"]
            for name, address in zip(p["mon_names"], p["mon_addresses"]):
                argv += ["--addv", name, "[v2:%s:3300,v1:%s:6789]" % (address, address)]
            run(argv + [new], timeout=60, check=True)
            os.chown(new, *ids("ceph", "ceph"))
            os.rename(new, MONMAP)
            changed = True
        with open(MONMAP, "rb") as handle:
            monmap = base64.b64encode(handle.read()).decode("ascii")
    except CommandError as err:
        module.fail_json(msg=str(err), rc=err.rc)

    module.exit_json(
        changed=changed,
        admin_keyring=read_text(ADMIN),
        bootstrap_osd_keyring=read_text(BOOTSTRAP_OSD),
        mon_keyring=mon_keyring,
        mgr_keyrings=mgr_keyrings,
        monmap=monmap,
    )


if __name__ == "__main__":
    main()
