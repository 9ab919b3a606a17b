#!/usr/bin/python3
# Carapace: the bounded waits of the Ceph playbooks, polling the cluster every second from a
# host with the admin keyring (one task, instead of a retried command every few seconds).
"""Wait (bounded) for the monitors' quorum or for OSDs up, in and answering."""

DOCUMENTATION = r"""
module: carapace_ceph_wait
short_description: Waits for the monitors in quorum, or for OSDs up, in and answering
description:
  - quorum=N waits until N monitors are in quorum (ceph quorum_status); with osds or
    osd_ids, before the OSDs.
  - osds=N waits until the cluster has at least N OSDs, all of them up and in (ceph osd
    dump); osd_ids=[...] waits for those OSDs only. Then every one of them must answer
    `ceph tell osd.ID version` (the monitor may still list a dead OSD as up).
  - Returns status, the text of `ceph -s`, in both cases; fails with it and the reason when
    the wait runs out. Changes nothing.
options:
  quorum: {type: int}
  osds: {type: int}
  osd_ids: {type: list, elements: int}
  timeout: {type: int, default: 300, description: seconds}
  cli_timeout: {type: int, default: 30, description: bound of each ceph call (seconds)}
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import ceph, start_all, tail


class Unanswered(Exception):
    """The cluster did not answer a call (yet)."""


def status(cli_timeout):
    rc, out, err = ceph(["-s"], timeout=cli_timeout, check=False)
    return out if rc == 0 else (out + err)


def poll(check, timeout, cli_timeout):
    """Calls check() (-> (done, what)) every second until done or timeout; returns (done, what)."""
    deadline = time.monotonic() + timeout
    what = ""
    while True:
        try:
            done, what = check()
        except Unanswered as err:
            done, what = False, str(err)
        except (ValueError, KeyError, TypeError) as err:
            done, what = False, "unreadable answer: %s" % err
        if done or time.monotonic() >= deadline:
            return done, what
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            quorum=dict(type="int"),
            osds=dict(type="int"),
            osd_ids=dict(type="list", elements="int"),
            timeout=dict(type="int", default=300),
            cli_timeout=dict(type="int", default=30),
        ),
        mutually_exclusive=[["osds", "osd_ids"]],
        required_one_of=[["quorum", "osds", "osd_ids"]],
        supports_check_mode=True,
    )
    p = module.params
    cli = max(5, p["cli_timeout"])
    started = time.monotonic()

    def command(args):
        # short calls while polling: a monitor that does not answer is asked again
        rc, out, err = ceph(args + ["-f", "json"], timeout=min(cli, 10), check=False)
        if rc != 0:
            raise Unanswered(tail(err or out, 3) or "ceph exited with %s" % rc)
        return json.loads(out)

    if p["quorum"] is not None:
        def check():
            names = command(["quorum_status"])["quorum_names"]
            return len(names) >= p["quorum"], "%d of %d monitors in quorum (%s)" % (len(names), p["quorum"], ", ".join(names))

        done, what = poll(check, p["timeout"], cli)
        if not done:
            module.fail_json(msg="the monitors did not reach quorum within %d s: %s" % (p["timeout"], what), status=status(cli))
        if p["osds"] is None and p["osd_ids"] is None:
            module.exit_json(changed=False, status=status(cli), waited=round(time.monotonic() - started, 1), detail=what)

    wanted = p["osd_ids"]

    def check():
        osds = command(["osd", "dump"])["osds"]
        if wanted is not None:
            mine = [o for o in osds if o["osd"] in wanted]
            ready = [o for o in mine if o["up"] == 1 and o["in"] == 1]
            return len(ready) == len(wanted), "%d of OSDs %s up and in" % (len(ready), ", ".join(map(str, wanted)))
        ready = [o for o in osds if o["up"] == 1 and o["in"] == 1]
        return len(osds) >= p["osds"] and len(ready) == len(osds), "%d OSDs, %d up and in, %d expected" % (len(osds), len(ready), p["osds"])

    done, what = poll(check, max(0, p["timeout"] - (time.monotonic() - started)), cli)
    if not done:
        module.fail_json(msg="the OSDs were not up and in within %d s: %s" % (p["timeout"], what), status=status(cli))

    # every OSD answers (asked at once, again while time is left)
    ids = wanted if wanted is not None else [o["osd"] for o in command(["osd", "dump"])["osds"]]
    deadline = started + p["timeout"]
    silent = list(ids)
    last = {}
    while silent:
        answers = start_all([["timeout", str(cli), "ceph", "--connect-timeout", str(cli - 5), "tell", "osd.%d" % i, "version"] for i in silent], cli + 5)
        last = {argv[6]: tail(err or out, 2) for argv, rc, out, err in answers if rc != 0}
        silent = [i for i in silent if "osd.%d" % i in last]
        if not silent or time.monotonic() >= deadline:
            break
        time.sleep(1)
    if silent:
        module.fail_json(
            msg="OSDs up and in but not answering within %d s: %s" % (p["timeout"], "; ".join("%s: %s" % kv for kv in last.items())),
            status=status(cli),
        )
    module.exit_json(changed=False, status=status(cli), waited=round(time.monotonic() - started, 1), detail=what)


if __name__ == "__main__":
    main()
