#!/usr/bin/python3
# Carapace: steps a playbook reports without doing anything (what it decided not to do).
"""Report steps by name."""

DOCUMENTATION = r"""
module: carapace_step
short_description: Reports one step per name given, and changes nothing
description:
  - Returns carapace_steps, which the runner's callback shows as steps in place of this
    task's own, e.g. "osd.3 on ceph-2 - already 18.2.7, not restarted".
  - unknown (check mode only) is returned as check_mode_unknown: what a preview cannot know
    and why, e.g. that the OSDs it would create cannot be waited for. Outside check mode it
    is ignored.
options:
  names: {type: list, elements: str, required: true}
  unknown: {type: str, default: "", description: "check mode: why the steps' outcome cannot be known"}
"""

import time

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(names=dict(type="list", elements="str", required=True), unknown=dict(type="str", default="")),
                           supports_check_mode=True)
    now = time.time()
    result = dict(changed=False, carapace_steps=[{"name": n, "result": "ok", "time_started": now, "time_finished": now} for n in module.params["names"]])
    if module.check_mode and module.params["unknown"]:
        result["check_mode_unknown"] = module.params["unknown"]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
