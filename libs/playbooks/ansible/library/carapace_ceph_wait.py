#!/usr/bin/python3
# Carapace: the bounded waits of the Ceph playbooks, polling the cluster every second from a
# host with the admin keyring (one task, instead of a retried command every few seconds),
# through librados (python3-rados, which the ceph CLI itself uses) on one connection: no
# Python start per call, which matters on a host busy starting OSDs.
"""Wait (bounded) for the monitors' quorum or for OSDs up, in and answering."""

DOCUMENTATION = r"""
module: carapace_ceph_wait
short_description: Waits for the monitors in quorum, or for OSDs up, in and answering
description:
  - quorum=N waits until N monitors are in quorum (ceph quorum_status); with osds or
    osd_ids, before the OSDs.
  - mgr=true waits, after the quorum, until a manager is active (ceph mgr stat).
  - osds=N waits until the cluster has at least N OSDs, all of them up and in (ceph osd
    dump); osd_ids=[...] waits for those OSDs only. Then every one of them must answer
    `ceph tell osd.ID version` (the monitor may still list a dead OSD as up).
  - Asks through librados (python3-rados, a dependency of ceph-common) on one connection.
  - Returns status, the text of `ceph -s`, in both cases; fails with it and the reason when
    the wait runs out. Changes nothing.
  - Check mode asks the same for at most check_timeout seconds. What it waits for follows
    changes a preview did not make (daemons made, started or restarted), so a wait that runs
    out there, or a host without python3-rados yet, is not a failure: the module returns
    changed false with check_mode_unknown saying what was missing, and the status.
options:
  quorum: {type: int}
  osds: {type: int}
  osd_ids: {type: list, elements: int}
  mgr: {type: bool, description: wait for an active manager when true}
  timeout: {type: int, default: 300, description: seconds}
  cli_timeout: {type: int, default: 30, description: bound of each call to the cluster (seconds; at most 10 are used while polling)}
  check_timeout: {type: int, default: 10, description: check mode - how long it waits}
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import UNKNOWN, tail


class Unanswered(Exception):
    """The cluster did not answer a call (yet)."""


class Cluster:
    """Asks the cluster as client.admin through librados, on one connection made at the
    first call (and again after a failed one)."""

    def __init__(self, rados, timeout):
        self.rados = rados
        self.timeout = timeout
        self.client = None

    def _connected(self):
        if self.client is None:
            client = self.rados.Rados(conffile="/etc/ceph/ceph.conf", rados_id="admin")
            try:
                client.connect(timeout=self.timeout)
            except self.rados.Error as err:
                client.shutdown()
                raise Unanswered("cannot connect to the cluster: %s" % err) from err
            self.client = client
        return self.client

    def mon(self, prefix):
        """The JSON answer of a monitor command (`quorum_status`, `osd dump`, `mgr stat`)."""
        try:
            ret, out, outs = self._connected().mon_command(json.dumps({"prefix": prefix, "format": "json"}), b"", timeout=self.timeout)
        except self.rados.Error as err:
            self.close()
            raise Unanswered(str(err)) from err
        if ret != 0:
            raise Unanswered(outs or "error %d" % ret)
        return json.loads(out)

    def silent_osds(self, ids):
        """{"osd.N": why} of the OSDs that do not answer `tell osd.N version`."""
        silent = {}
        for i in ids:
            try:
                ret, _, outs = self._connected().osd_command(i, json.dumps({"prefix": "version"}), b"", timeout=self.timeout)
                if ret != 0:
                    silent["osd.%d" % i] = outs or "error %d" % ret
            except Unanswered as err:
                silent["osd.%d" % i] = str(err)
            except self.rados.Error as err:
                silent["osd.%d" % i] = tail(str(err), 2)
        return silent

    def status(self):
        """The text of `ceph -s` (or why there is none)."""
        try:
            ret, out, outs = self._connected().mon_command(json.dumps({"prefix": "status"}), b"", timeout=self.timeout)
            return out.decode("utf-8", "replace") if ret == 0 else outs
        except (self.rados.Error, Unanswered) as err:
            return str(err)

    def close(self):
        if self.client is not None:
            self.client.shutdown()
            self.client = None


def poll(check, timeout):
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
            mgr=dict(type="bool"),
            timeout=dict(type="int", default=300),
            cli_timeout=dict(type="int", default=30),
            check_timeout=dict(type="int", default=10),
        ),
        mutually_exclusive=[["osds", "osd_ids"]],
        required_one_of=[["quorum", "osds", "osd_ids", "mgr"]],
        supports_check_mode=True,
    )
    p = module.params
    if module.check_mode:
        p["timeout"] = min(p["timeout"], p["check_timeout"])
    try:
        import rados  # pylint: disable=import-outside-toplevel
    except ImportError:
        refuse(module, msg="python3-rados is missing (ceph-common depends on it): cannot ask the cluster")
    # short calls while polling: a monitor that does not answer is asked again
    cluster = Cluster(rados, min(max(5, p["cli_timeout"]), 10))
    try:
        wait(module, p, cluster)
    finally:
        cluster.close()


def refuse(module, msg, **result):
    """Fails with msg; in check mode, says instead that it cannot be known before a real run."""
    if module.check_mode:
        result[UNKNOWN] = "%s; in check mode nothing was made, started or restarted before this wait, so whether a real run gets there is known only then" % msg
        module.exit_json(changed=False, **result)
    module.fail_json(msg=msg, **result)


def wait(module, p, cluster):
    started = time.monotonic()
    what = ""

    if p["quorum"] is not None:
        def check_quorum():
            names = cluster.mon("quorum_status")["quorum_names"]
            return len(names) >= p["quorum"], "%d of %d monitors in quorum (%s)" % (len(names), p["quorum"], ", ".join(names))

        done, what = poll(check_quorum, p["timeout"])
        if not done:
            refuse(module, msg="the monitors did not reach quorum within %d s: %s" % (p["timeout"], what), status=cluster.status())

    if p["mgr"]:
        def check_mgr():
            stat = cluster.mon("mgr stat")
            return bool(stat["available"]), "manager %s" % ("%s active" % stat.get("active_name") if stat["available"] else "not active yet")

        done, what = poll(check_mgr, max(0, p["timeout"] - (time.monotonic() - started)))
        if not done:
            refuse(module, msg="no manager became active within %d s" % p["timeout"], status=cluster.status())

    if p["osds"] is None and p["osd_ids"] is None:
        module.exit_json(changed=False, status=cluster.status(), waited=round(time.monotonic() - started, 1), detail=what)

    wanted = p["osd_ids"]

    def check_osds():
        osds = cluster.mon("osd dump")["osds"]
        if wanted is not None:
            mine = [o for o in osds if o["osd"] in wanted]
            ready = [o for o in mine if o["up"] == 1 and o["in"] == 1]
            return len(ready) == len(wanted), "%d of OSDs %s up and in" % (len(ready), ", ".join(map(str, wanted)))
        ready = [o for o in osds if o["up"] == 1 and o["in"] == 1]
        return len(osds) >= p["osds"] and len(ready) == len(osds), "%d OSDs, %d up and in, %d expected" % (len(osds), len(ready), p["osds"])

    done, what = poll(check_osds, max(0, p["timeout"] - (time.monotonic() - started)))
    if not done:
        refuse(module, msg="the OSDs were not up and in within %d s: %s" % (p["timeout"], what), status=cluster.status())

    # every OSD answers (asked again while time is left)
    ids = wanted if wanted is not None else [o["osd"] for o in cluster.mon("osd dump")["osds"]]
    deadline = started + p["timeout"]
    silent = cluster.silent_osds(ids)
    while silent and time.monotonic() < deadline:
        time.sleep(1)
        silent = cluster.silent_osds([i for i in ids if "osd.%d" % i in silent])
    if silent:
        refuse(module, 
            msg="OSDs up and in but not answering within %d s: %s" % (p["timeout"], "; ".join("%s: %s" % kv for kv in silent.items())),
            status=cluster.status(),
        )
    module.exit_json(changed=False, status=cluster.status(), waited=round(time.monotonic() - started, 1), detail=what)


if __name__ == "__main__":
    main()
