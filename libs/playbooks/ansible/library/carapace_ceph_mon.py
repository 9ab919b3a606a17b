#!/usr/bin/python3
# Carapace: one monitor of a new cluster in one round trip: its keyrings, its store made from
# the cluster's initial monitor map (ceph-mon --mkfs), its unit enabled and started.
"""Create and start a Ceph monitor."""

DOCUMENTATION = r"""
module: carapace_ceph_mon
short_description: Creates and starts a Ceph monitor of a new cluster
description:
  - Installs the admin keyring (/etc/ceph/ceph.client.admin.keyring, root, 0600), makes the
    monitor store with ceph-mon --mkfs from the monitor keyring and the initial monitor map
    (carapace_ceph_keys) unless the monitor has one, and enables and starts
    ceph-mon@NAME (and ceph-mon.target). A second run changes nothing.
  - Check mode changes nothing and reports what it would do (would_change; a diff that never
    shows a key).
options:
  name: {type: str, required: true, description: the monitor id (the short host name)}
  fsid: {type: str, required: true}
  admin_keyring: {type: str, required: true, no_log: true}
  mon_keyring: {type: str, required: true, no_log: true}
  monmap: {type: str, required: true, description: the initial monitor map, base64}
"""

import base64
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import CommandError, check_mode, check_result, ensure_dir, make_mon_store, systemd_running, write_file


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            fsid=dict(type="str", required=True),
            admin_keyring=dict(type="str", required=True, no_log=True),
            mon_keyring=dict(type="str", required=True, no_log=True),
            monmap=dict(type="str", required=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    check_mode(module)
    data = "/var/lib/ceph/mon/ceph-%s" % p["name"]
    changed = False
    try:
        changed |= ensure_dir("/etc/ceph", 0o755)
        changed |= write_file("/etc/ceph/ceph.client.admin.keyring", p["admin_keyring"], 0o600, secret=True)
        if not os.path.exists(os.path.join(data, "keyring")):
            make_mon_store(p["name"], p["fsid"], p["mon_keyring"], base64.b64decode(p["monmap"]), timeout=120)
            changed = True
        changed |= systemd_running(["ceph-mon.target", "ceph-mon@%s.service" % p["name"]])
    except CommandError as err:
        module.fail_json(msg=str(err), rc=err.rc)
    module.exit_json(**check_result(changed=changed))


if __name__ == "__main__":
    main()
