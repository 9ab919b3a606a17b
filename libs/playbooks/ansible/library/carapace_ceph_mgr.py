#!/usr/bin/python3
# Carapace: one manager in one round trip: its keyring, its unit enabled and started.
"""Create and start a Ceph manager."""

DOCUMENTATION = r"""
module: carapace_ceph_mgr
short_description: Creates and starts a Ceph manager
description:
  - Writes /var/lib/ceph/mgr/ceph-NAME/keyring (ceph, 0600) and enables and starts
    ceph-mgr@NAME (and ceph-mgr.target). A second run changes nothing.
  - Check mode changes nothing and reports what it would do (would_change; a diff that never
    shows the key).
options:
  name: {type: str, required: true, description: the manager id (the short host name)}
  keyring: {type: str, required: true, no_log: true, description: "the [mgr.NAME] keyring"}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import CommandError, check_mode, check_result, ensure_dir, systemd_running, write_file


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            keyring=dict(type="str", required=True, no_log=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    check_mode(module)
    data = "/var/lib/ceph/mgr/ceph-%s" % p["name"]
    try:
        changed = ensure_dir(data, 0o750, "ceph", "ceph")
        changed |= write_file(data + "/keyring", p["keyring"].rstrip("\n") + "\n", 0o600, "ceph", "ceph", secret=True)
        changed |= systemd_running(["ceph-mgr.target", "ceph-mgr@%s.service" % p["name"]])
    except CommandError as err:
        module.fail_json(msg=str(err), rc=err.rc)
    module.exit_json(**check_result(changed=changed))


if __name__ == "__main__":
    main()
