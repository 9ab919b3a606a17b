#!/usr/bin/python3
# Carapace: the end of an upgrade, once every daemon runs the target: the OSD release the
# cluster requires, raised, so that no OSD of the old release can join any more.
"""Check that every daemon runs the target version, then raise require_osd_release."""

DOCUMENTATION = r"""
module: carapace_ceph_upgrade_finish
short_description: Finishes an upgrade - every daemon checked, require_osd_release raised
description:
  - Runs on a monitor host (admin keyring). Fails, naming them, when a monitor, manager or
    OSD (also a down one: its metadata says what it last ran) does not run the target
    version. Then sets `ceph osd require-osd-release RELEASE` when the cluster requires an
    older one, and unsets the per-host noout flags Carapace set and left (a run canceled
    midway). A second run changes nothing.
options:
  target: {type: str, required: true, description: the upstream version (18.2.7)}
  cli_timeout: {type: int, default: 30}
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import UNKNOWN, check_mode, check_result, would
from ansible.module_utils.carapace_ceph_cluster import (
    RELEASES,
    Refused,
    ceph_command,
    marked_noout,
    osd_dump,
    release_name,
    running_versions,
    release_options,
    unset_noout,
    upstream,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            target=dict(type="str", required=True),
            cli_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    checking = check_mode(module)
    timeout = p["cli_timeout"]
    target = upstream(p["target"])
    release = release_name(target)
    steps = []
    try:
        versions = running_versions(timeout)
        behind = ["%s.%s %s" % (kind, i, v or "?") for kind in ("mon", "mgr", "osd") for i, v in sorted(versions[kind].items()) if v != target]
        if behind and checking:
            # a preview upgraded nothing: the daemons still run what they ran
            module.exit_json(changed=False, release=release, **{UNKNOWN: "nothing is upgraded in check mode, so %s still run their version: "
                                                                "whether require_osd_release becomes %s is known after a real upgrade" % (", ".join(behind), release)})
        if behind:
            module.fail_json(msg="not every daemon runs %s yet: %s" % (target, ", ".join(behind)))
        started = time.time()
        required = osd_dump(timeout).get("require_osd_release", "")
        order = dict((name, number) for number, name in RELEASES.items())
        changed = False
        if release and order.get(required, 0) < order.get(release, 0):
            if checking:
                would("ceph osd require-osd-release %s (now %s)" % (release, required))
            else:
                rc, said = ceph_command(["osd", "require-osd-release", release], timeout)
                if rc != 0:
                    module.fail_json(msg="ceph osd require-osd-release %s: %s" % (release, said))
            steps.append({"name": "require_osd_release: %s → %s" % (required, release), "result": "ok", "changed": True,
                          "time_started": started, "time_finished": time.time()})
            changed = True
        for bucket in sorted(marked_noout(timeout)):
            if unset_noout(bucket, timeout):
                steps.append({"name": "noout of %s unset (left by an earlier run)" % bucket, "result": "ok", "changed": True,
                              "time_started": started, "time_finished": time.time()})
                changed = True
        for option in release_options(timeout):
            steps.append({"name": "%s removed from the central configuration (left by an earlier run)" % option, "result": "ok", "changed": True,
                          "time_started": started, "time_finished": time.time()})
            changed = True
    except Refused as err:
        module.fail_json(msg=str(err))
    if not steps:
        steps.append({"name": "every daemon runs %s, require_osd_release %s" % (target, release), "result": "ok"})
    module.exit_json(**check_result(changed=changed, carapace_steps=steps, release=release))


if __name__ == "__main__":
    main()
