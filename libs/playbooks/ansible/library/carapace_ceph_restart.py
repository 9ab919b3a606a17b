#!/usr/bin/python3
# Carapace: daemons of this host restarted together, once their gate said yes.
"""Restart Ceph daemon units of this host."""

DOCUMENTATION = r"""
module: carapace_ceph_restart
short_description: Restarts Ceph daemon units of this host, together
description:
  - Clears a failed state (a unit restarted too often refuses to start), then restarts the
    units in one systemctl call; returns when systemd has started them (the daemons may
    still be booting) and the time the restart began, for the wait that follows.
  - Check mode restarts nothing and reports changed (a restart always is a change).
options:
  units: {type: list, elements: str, required: true}
  timeout: {type: int, default: 300}
"""

import re
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import check_mode, run, tail

UNIT = re.compile(r"^ceph-(mon|mgr|osd|mds|radosgw)@[A-Za-z0-9._-]+\.service$")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            units=dict(type="list", elements="str", required=True),
            timeout=dict(type="int", default=300),
        ),
        supports_check_mode=True,
    )
    units = module.params["units"]
    bad = [u for u in units if not UNIT.match(u)]
    if bad or not units:
        module.fail_json(msg="not Ceph daemon units: %s" % (", ".join(bad) or "none given"))
    started = time.time()
    if check_mode(module):
        # a restart always changes: the daemons would stop and start again
        module.exit_json(changed=True, restarted_at=started, started_at=started, would_change=["restart %s" % " ".join(units)])
    run(["systemctl", "reset-failed"] + units, timeout=60)
    rc, out, err = run(["systemctl", "restart"] + units, timeout=module.params["timeout"])
    if rc != 0:
        module.fail_json(msg="systemctl restart %s failed: %s" % (" ".join(units), tail(err or out)), rc=rc, restarted_at=started)
    module.exit_json(changed=True, restarted_at=started, started_at=time.time())


if __name__ == "__main__":
    main()
