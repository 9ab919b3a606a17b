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
    unset. Once no host is left under Carapace's noout, removes the options Carapace set in
    the central configuration meanwhile (HELD_OPTIONS of module_utils/carapace_ceph_cluster,
    marked in config-key carapace/config/WHO/NAME). Reports what it unset and removed.
  - Check mode reads the marks and flags and reports what it would unset, unsetting nothing.
options:
  buckets: {type: list, elements: str, default: []}
  cli_timeout: {type: int, default: 30}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import check_mode
from ansible.module_utils.carapace_ceph_cluster import Refused, group_flags, marked_noout, osd_dump, release_options, unset_noout


def main():
    module = AnsibleModule(
        argument_spec=dict(
            buckets=dict(type="list", elements="str", default=[]),
            cli_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        if check_mode(module):
            marked = marked_noout(p["cli_timeout"])
            buckets = [b for b in (p["buckets"] or sorted(marked)) if b in marked]
            dump = osd_dump(p["cli_timeout"])
            would_change = ["unset noout on %s" % b if "noout" in group_flags(dump, b) else "remove Carapace's noout mark of %s" % b for b in buckets]
            released = release_options(p["cli_timeout"], leaving=buckets)
            would_change += ["remove %s from the central configuration (Carapace set it while OSDs restarted)" % o for o in released]
            module.exit_json(changed=bool(buckets or released), unset=buckets, released=released, would_change=would_change)
        buckets = p["buckets"] or sorted(marked_noout(p["cli_timeout"]))
        unset = [b for b in buckets if unset_noout(b, p["cli_timeout"], release=False)]
        # also when no bucket was Carapace's to unset (an operator's noout): the options it held go
        released = release_options(p["cli_timeout"], leaving=unset)
    except Refused as err:
        module.fail_json(msg=str(err))
    module.exit_json(changed=bool(unset or released), unset=unset, released=released)


if __name__ == "__main__":
    main()
