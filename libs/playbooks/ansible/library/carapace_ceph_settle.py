#!/usr/bin/python3
# Carapace: after a restart, the daemons back (a new incarnation, the version expected) and,
# for OSDs, every PG active+clean again, before the next host is touched.
"""Wait (bounded) for restarted daemons to be back, and report a step for each."""

DOCUMENTATION = r"""
module: carapace_ceph_settle
short_description: Waits for restarted daemons to be back, one step per daemon
description:
  - Runs on a monitor host (admin keyring), after carapace_ceph_restart on the daemons' host.
  - mon - the monitor is in quorum again after a later election than before its restart,
    running the version expected. mgr - the manager is back (active or standby) under a new
    gid, at that version. osd - each OSD is up again (a later up_from), at that version, and
    then every PG of the cluster is active+clean.
  - Returns carapace_steps, a step for each daemon (its version before and after, and how
    long it was down) that the runner's callback shows in place of this task's own step.
    Fails, naming the daemons not back and the PG states, when timeout runs out.
  - Check mode: nothing was restarted, so whether the daemons come back (and at which
    version) cannot be known; the module says so (check_mode_unknown) with changed false, and
    for OSDs reports the PGs' state now (pgs_now) without waiting.
options:
  type: {type: str, choices: [mon, mgr, osd], required: true}
  ids: {type: list, elements: str, required: true}
  host: {type: str, default: "", description: the host name shown in the steps}
  before: {type: dict, required: true, description: carapace_ceph_gate's before}
  versions: {type: dict, default: {}, description: "id -> the version each ran before"}
  expect: {type: str, default: "", description: the upstream version they must run now (empty - any)}
  restarted_at: {type: float, required: true}
  timeout: {type: int, default: 600}
  clean_timeout: {type: int, default: 900}
  cli_timeout: {type: int, default: 30}
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import UNKNOWN, check_mode
from ansible.module_utils.carapace_ceph_cluster import (
    ceph_required,
    incarnations,
    osd_dump,
    pgs_clean,
    running_versions,
    upstream,
    wait_until,
)


def back(kind, ids, before, expect, timeout):
    """({id: True} of the daemons that are back - a new incarnation, up, at the version
    expected - and the versions of that kind), asking only what the kind needs: its metadata
    and one of quorum_status, osd dump or mgr dump."""
    versions = running_versions(timeout, (kind,))[kind]

    def at(i):
        return not expect or versions.get(i) == expect

    if kind == "mon":
        status = ceph_required(["quorum_status"], timeout)
        later = int(status.get("election_epoch", 0) or 0) > int(before.get("election_epoch", 0) or 0)
        return dict((i, later and i in status.get("quorum_names", []) and at(i)) for i in ids), versions
    if kind == "osd":
        osds = dict((str(o.get("osd")), o) for o in osd_dump(timeout).get("osds", []))
        return dict((i, bool((osds.get(i) or {}).get("up")) and int((osds.get(i) or {}).get("up_from", 0) or 0) > int(before.get(i, 0) or 0) and at(i))
                    for i in ids), versions
    now = incarnations(kind, ids, timeout)
    return dict((i, now.get(i, 0) not in (0, int(before.get(i, 0) or 0)) and at(i)) for i in ids), versions


def main():
    module = AnsibleModule(
        argument_spec=dict(
            type=dict(type="str", choices=["mon", "mgr", "osd"], required=True),
            ids=dict(type="list", elements="str", required=True),
            host=dict(type="str", default=""),
            before=dict(type="dict", required=True),
            versions=dict(type="dict", default={}),
            expect=dict(type="str", default=""),
            restarted_at=dict(type="float", required=True),
            timeout=dict(type="int", default=600),
            clean_timeout=dict(type="int", default=900),
            cli_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    kind, ids, timeout = p["type"], [str(i) for i in p["ids"]], p["cli_timeout"]
    if check_mode(module):
        result = {"changed": False, UNKNOWN: "nothing is restarted in check mode: whether %s%s would come back%s is known only after a real restart" % (
            ", ".join("%s.%s" % (kind, i) for i in ids), " on %s" % p["host"] if p["host"] else "", " at %s" % upstream(p["expect"]) if p["expect"] else "")}
        if kind == "osd":
            try:
                clean, words = pgs_clean(timeout)
                result["pgs_now"] = "%s: %s" % ("active+clean" if clean else "not all active+clean", words)
            except Exception as err:  # pylint: disable=broad-except
                result["pgs_now"] = "unknown: %s" % err
        module.exit_json(**result)
    expect = upstream(p["expect"]) if p["expect"] else ""
    seen = {}
    state = {"versions": {}}

    def all_back():
        found, versions = back(kind, ids, p["before"], expect, timeout)
        state["versions"] = versions
        now = time.time()
        for i, ok in found.items():
            if ok and i not in seen:
                seen[i] = now
        missing = [i for i in ids if i not in seen]
        return not missing, "not back yet: %s (running: %s)" % (
            ", ".join("%s.%s" % (kind, i) for i in missing), ", ".join("%s.%s %s" % (kind, i, versions.get(i, "?")) for i in missing))

    ok, words, _ = wait_until(all_back, p["timeout"], 1.0)
    where = " on %s" % p["host"] if p["host"] else ""
    steps = []
    for i in ids:
        before = p["versions"].get(i) or p["versions"].get(str(i)) or "?"
        after = state["versions"].get(i, "?")
        if i in seen:
            change = "%s → %s" % (before, after) if before != after else "%s, restarted" % after
            steps.append({"name": "%s.%s%s: %s, down %.1f s" % (kind, i, where, change, seen[i] - p["restarted_at"]),
                          "result": "ok", "changed": True, "time_started": p["restarted_at"], "time_finished": seen[i]})
        else:
            steps.append({"name": "%s.%s%s: not back" % (kind, i, where), "result": "error", "time_started": p["restarted_at"],
                          "error": {"msg": words}})
    if not ok:
        module.fail_json(msg="%s (waited %d s)" % (words, p["timeout"]), carapace_steps=steps)
    if kind == "osd":
        clean_started = time.time()
        clean, pg_words, waited = wait_until(lambda: pgs_clean(timeout), p["clean_timeout"], 2.0)
        if not clean:
            module.fail_json(msg="the PGs are not all active+clean %d s after the OSDs%s came back: %s" % (waited, where, pg_words), carapace_steps=steps)
        steps.append({"name": "PGs active+clean again after the OSDs%s (%.1f s)" % (where, waited), "result": "ok",
                      "time_started": clean_started, "time_finished": time.time()})
    module.exit_json(changed=True, carapace_steps=steps, versions=state["versions"])


if __name__ == "__main__":
    main()
