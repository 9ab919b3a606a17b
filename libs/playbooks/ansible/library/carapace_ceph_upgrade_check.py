#!/usr/bin/python3
# Carapace: everything an upgrade is refused for, asked before anything changes, all at once.
"""Decide whether the cluster may be upgraded to what the package source offers, and to what."""

DOCUMENTATION = r"""
module: carapace_ceph_upgrade_check
short_description: Refuses an upgrade before it starts, or plans it
description:
  - Runs on a monitor host (admin keyring). Given what the package source offers on every
    host (carapace_ceph_packages mode=check), it refuses, listing every reason at once, an
    upgrade when the hosts are offered different versions (or none), when the target is
    older than a daemon already runs (a downgrade), when it is more than two major releases
    ahead of the oldest daemon (Ceph supports N to N+2), when a monitor is out of quorum, when
    the health is not HEALTH_OK and a check is not among allowed_warnings (nor one that
    only says an upgrade is under way - OSD_UPGRADE_FINISHED, DAEMON_OLD_VERSION), when an OSD is
    not BlueStore and the target is Reef or later (FileStore was removed), or when
    require_osd_release is more than two releases behind, or when a daemon to restart runs
    on a host that is not in the configuration.
  - Otherwise returns the plan - the target version (upstream and Debian), its release name,
    and every daemon with its host, the version it runs, whether it needs a restart and (for
    managers) whether it is the active one - and changes nothing.
options:
  offered: {type: dict, required: true, description: "host -> {candidate, candidate_upstream} of carapace_ceph_packages"}
  allowed_warnings: {type: list, elements: str, default: []}
  hosts: {type: list, elements: str, required: true, description: the short host names of the configuration's hosts}
  cli_timeout: {type: int, default: 30}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph_cluster import (
    RELEASES,
    Refused,
    ceph_required,
    health,
    major,
    quorum,
    release_name,
    plan_daemons,
    version_key,
)

# What a cluster says in the middle of an upgrade (a run that failed or was canceled midway
# and is run again): never a reason to refuse finishing it.
UPGRADE_STATE_CHECKS = ("OSD_UPGRADE_FINISHED", "DAEMON_OLD_VERSION")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            offered=dict(type="dict", required=True),
            allowed_warnings=dict(type="list", elements="str", default=[]),
            hosts=dict(type="list", elements="str", required=True),
            cli_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    timeout = p["cli_timeout"]
    reasons = []
    candidates = dict((host, (o or {}).get("candidate", "")) for host, o in p["offered"].items())
    distinct = sorted(set(candidates.values()))
    if "" in distinct:
        reasons.append("the package source offers no Ceph version (or not the one asked for) to %s" % ", ".join(sorted(h for h, v in candidates.items() if not v)))
    elif len(distinct) > 1:
        reasons.append("the hosts are offered different versions: %s" % "; ".join("%s on %s" % (v, ", ".join(sorted(h for h, c in candidates.items() if c == v))) for v in distinct))
    target = distinct[0] if len(distinct) == 1 else ""
    target_upstream = ""
    if target:
        target_upstream = p["offered"][next(iter(p["offered"]))].get("candidate_upstream", "")
    try:
        daemons = plan_daemons(lambda d: d["version"] != target_upstream, timeout)
        in_quorum, mons = quorum(timeout)
        status, checks = health(timeout)
        osd_metadata = ceph_required(["osd", "metadata"], timeout) or []
        require = ceph_required(["osd", "dump"], timeout).get("require_osd_release", "")
    except Refused as err:
        module.fail_json(msg="the cluster does not answer: %s" % err)
    elsewhere = [d for d in daemons if d["restart"] and d["host"] not in p["hosts"]]
    if elsewhere:
        reasons.append("daemons run on hosts this configuration does not hold, so they could not be upgraded: %s" % (
            ", ".join("%s.%s on %s" % (d["type"], d["id"], d["host"] or "an unknown host") for d in elsewhere)))
    running = [d["version"] for d in daemons if d["version"]]
    if target_upstream and running:
        newer = [d for d in daemons if version_key(d["version"]) > version_key(target_upstream)]
        if newer:
            reasons.append("%s is older than what runs now (a downgrade, which Ceph does not support): %s" % (
                target_upstream, ", ".join("%s.%s %s" % (d["type"], d["id"], d["version"]) for d in newer)))
        oldest = min(running, key=version_key)
        if major(target_upstream) - major(oldest) > 2:
            reasons.append("%s is more than two major releases after %s (%s): Ceph upgrades from N to N+2 at most" % (
                target_upstream, oldest, ", ".join("%s.%s" % (d["type"], d["id"]) for d in daemons if d["version"] == oldest)))
        if require and major(target_upstream):
            require_major = next((m for m, name in RELEASES.items() if name == require), 0)
            if require_major and major(target_upstream) - require_major > 2:
                reasons.append("require_osd_release is %s: finish the previous upgrade (ceph osd require-osd-release) first" % require)
    missing = [m for m in mons if m not in in_quorum]
    if missing:
        reasons.append("the monitors' quorum is not complete: %s out of quorum (in quorum: %s)" % (", ".join(missing), ", ".join(in_quorum) or "none"))
    allowed = set(p["allowed_warnings"]) | set(UPGRADE_STATE_CHECKS)
    refused_checks = dict((code, words) for code, words in checks.items() if code not in allowed)
    if status != "HEALTH_OK" and (refused_checks or not checks):
        reasons.append("the cluster is %s: %s (allow a warning with the hint allowed_warnings)" % (
            status, "; ".join("%s: %s" % item for item in sorted(refused_checks.items())) or "no check given"))
    if target_upstream and major(target_upstream) >= 18:
        filestore = sorted(str(m.get("id")) for m in osd_metadata if isinstance(m, dict) and m.get("osd_objectstore") not in (None, "bluestore"))
        if filestore:
            reasons.append("OSDs %s are not BlueStore, which Ceph %s requires" % (", ".join(filestore), release_name(target_upstream)))
    if reasons:
        module.fail_json(msg="upgrade refused before anything changed: " + " | ".join(reasons), reasons=reasons, daemons=daemons)
    module.exit_json(
        changed=False,
        target=target,
        target_upstream=target_upstream,
        release=release_name(target_upstream),
        require_osd_release=require,
        daemons=daemons,
        health=status,
    )


if __name__ == "__main__":
    main()
