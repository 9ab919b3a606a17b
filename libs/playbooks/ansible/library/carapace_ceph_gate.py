#!/usr/bin/python3
# Carapace: Ceph's own word before a daemon stops, asked again (bounded) until it says yes.
"""Ask Ceph whether daemons may stop; for a host's OSDs, then set noout for that host only."""

DOCUMENTATION = r"""
module: carapace_ceph_gate
short_description: Asks Ceph whether daemons may stop, waiting (bounded) for a yes
description:
  - Runs on a monitor host (admin keyring).
  - type=mon asks `ceph mon ok-to-stop ID` (an id the monmap does not hold is a no: Ceph
    itself answers yes to it).
  - type=osd asks `ceph osd ok-to-stop IDS` for the OSDs of one host together (they stop
    together), then sets noout on that host's CRUSH bucket only (`ceph osd set-group noout
    HOST`), marked in the config-key store as Carapace's (carapace/noout/HOST), unless an
    operator had set it already: such a flag is left as it is, and never unset by Carapace.
  - type=mgr: a manager may always stop (clients do not need it); when it is the active one
    and a standby is available, `ceph mgr fail ID` hands over at once instead of after the
    beacon grace.
  - Returns before, what identifies the daemons' current incarnations (carapace_ceph_settle
    waits for new ones).
  - A no is asked again every interval seconds until timeout; then the module fails with
    Ceph's last answer. Changes nothing when asked no.
options:
  type: {type: str, choices: [mon, mgr, osd], required: true}
  ids: {type: list, elements: str, required: true}
  host_bucket: {type: str, description: the CRUSH host bucket of the OSDs (type=osd)}
  why: {type: str, default: carapace, description: written with the noout mark}
  timeout: {type: int, default: 300}
  interval: {type: int, default: 5}
  cli_timeout: {type: int, default: 30}
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph_cluster import (
    Refused,
    ceph_command,
    ceph_required,
    incarnations,
    mon_ok_to_stop,
    osd_ok_to_stop,
    set_noout,
    wait_until,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            type=dict(type="str", choices=["mon", "mgr", "osd"], required=True),
            ids=dict(type="list", elements="str", required=True),
            host_bucket=dict(type="str", default=""),
            why=dict(type="str", default="carapace"),
            timeout=dict(type="int", default=300),
            interval=dict(type="int", default=5),
            cli_timeout=dict(type="int", default=30),
        ),
    )
    p = module.params
    kind, ids, timeout = p["type"], p["ids"], p["cli_timeout"]
    started = time.time()
    try:
        if kind == "mgr":
            dump = ceph_required(["mgr", "dump"], timeout)
            standbys = [s.get("name") for s in dump.get("standbys", [])]
            failed_over = False
            if dump.get("active_name") in ids and [s for s in standbys if s not in ids]:
                rc, said = ceph_command(["mgr", "fail", dump["active_name"]], timeout)
                if rc != 0:
                    module.fail_json(msg="ceph mgr fail %s: %s" % (dump["active_name"], said))
                failed_over = True
            module.exit_json(changed=failed_over, ok=True, answer="a manager may stop (standbys: %s)" % (", ".join(standbys) or "none"),
                             waited=0, before=incarnations(kind, ids, timeout))
        if kind == "mon":
            ok, words, waited = wait_until(lambda: mon_ok_to_stop(ids[0], timeout), p["timeout"], p["interval"])
        else:
            if not p["host_bucket"]:
                module.fail_json(msg="type=osd needs host_bucket")
            ok, words, waited = wait_until(lambda: osd_ok_to_stop(ids, timeout), p["timeout"], p["interval"])
        if not ok:
            module.fail_json(
                msg="Ceph says %s %s may not stop (asked for %d s): %s" % (kind, ", ".join("%s.%s" % (kind, i) for i in ids), waited, words),
                answer=words, waited=round(waited, 1))
        before = incarnations(kind, ids, timeout)
        flag_set = False
        if kind == "osd":
            flag_set = set_noout(p["host_bucket"], p["why"], timeout)
        module.exit_json(changed=flag_set, ok=True, answer=words, waited=round(time.time() - started, 1), noout_set=flag_set, before=before)
    except Refused as err:
        module.fail_json(msg=str(err))


if __name__ == "__main__":
    main()
