#!/usr/bin/python3
# Carapace: the plan of a rolling restart, read from Ceph: which daemons run where.
"""List the cluster's daemons and mark those of the types to restart."""

DOCUMENTATION = r"""
module: carapace_ceph_daemons
short_description: The plan of a rolling restart - every daemon, where it runs, which to restart
description:
  - Runs on a monitor host (admin keyring). Reads the monitors', managers' and OSDs'
    metadata (also of daemons down now) and the active manager; returns every daemon with
    its host (short name), its version, whether it is the active manager, and restart=true
    for those of the types asked. Fails, changing nothing, when a daemon to restart runs on
    a host that is not in the configuration (hosts).
options:
  types: {type: list, elements: str, required: true, description: "mgr, mon, osd"}
  hosts: {type: list, elements: str, required: true, description: the short host names of the configuration's hosts}
  cli_timeout: {type: int, default: 30}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph_cluster import Refused, plan_daemons


def main():
    module = AnsibleModule(
        argument_spec=dict(
            types=dict(type="list", elements="str", required=True),
            hosts=dict(type="list", elements="str", required=True),
            cli_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        daemons = plan_daemons(lambda d: d["type"] in p["types"], p["cli_timeout"])
    except Refused as err:
        module.fail_json(msg="the cluster does not answer: %s" % err)
    elsewhere = [d for d in daemons if d["restart"] and d["host"] not in p["hosts"]]
    if elsewhere:
        module.fail_json(msg="daemons run on hosts this configuration does not hold, so they could not be restarted: %s" % (
            ", ".join("%s.%s on %s" % (d["type"], d["id"], d["host"] or "an unknown host") for d in elsewhere)), daemons=daemons)
    module.exit_json(changed=False, daemons=daemons, target="", target_upstream="")


if __name__ == "__main__":
    main()
