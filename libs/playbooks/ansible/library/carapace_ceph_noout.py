#!/usr/bin/python3
# Carapace: the per-host noout flags Carapace set, unset again, and only those.
"""Unset the noout flags Carapace set (marked in the config-key store)."""

DOCUMENTATION = r"""
module: carapace_ceph_noout
short_description: Unsets the per-host noout flags that Carapace set
description:
  - Runs on a monitor host (admin keyring). Unsets noout on the host buckets given (all
    those Carapace marked when buckets is empty) where Carapace set it (its mark in
    config-key carapace/noout/HOST), and removes the mark. A flag an operator set is never
    unset. Reports what it unset.
options:
  buckets: {type: list, elements: str, default: []}
  cli_timeout: {type: int, default: 30}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph_cluster import Refused, marked_noout, unset_noout


def main():
    module = AnsibleModule(
        argument_spec=dict(
            buckets=dict(type="list", elements="str", default=[]),
            cli_timeout=dict(type="int", default=30),
        ),
    )
    p = module.params
    try:
        buckets = p["buckets"] or sorted(marked_noout(p["cli_timeout"]))
        unset = [b for b in buckets if unset_noout(b, p["cli_timeout"])]
    except Refused as err:
        module.fail_json(msg=str(err))
    module.exit_json(changed=bool(unset), unset=unset)


if __name__ == "__main__":
    main()
