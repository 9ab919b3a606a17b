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
  - type=destroy asks `ceph osd safe-to-destroy IDS` (again, until timeout). In check mode,
    where the OSDs are not marked out first, a no is a refusal only when the rest of the
    cluster could not hold the data: a pool keeps more copies (or chunks) than failure
    domains with up and in OSDs would be left without these. Otherwise the answer is
    check_mode_unknown: the data would move once they are out, and only a real run tells
    whether Ceph then says yes.
  - type=mgr: a manager may always stop (clients do not need it); when it is the active one
    and a standby is available, `ceph mgr fail ID` hands over at once instead of after the
    beacon grace.
  - Returns before, what identifies the daemons' current incarnations (carapace_ceph_settle
    waits for new ones).
  - A no is asked again every interval seconds until timeout; then the module fails with
    Ceph's last answer. Changes nothing when asked no.
  - Check mode asks the same questions (for at most check_timeout seconds: nothing a preview
    does can change Ceph's answer) and fails with the same message on a no; on a yes it
    reports whether it would set noout or hand the active manager over (would_change), and
    does neither.
options:
  type: {type: str, choices: [mon, mgr, osd, destroy], required: true}
  ids: {type: list, elements: str, required: true}
  host_bucket: {type: str, description: the CRUSH host bucket of the OSDs (type=osd)}
  why: {type: str, default: carapace, description: written with the noout mark}
  timeout: {type: int, default: 300}
  interval: {type: int, default: 5}
  cli_timeout: {type: int, default: 30}
  check_timeout: {type: int, default: 30, description: check mode - how long a no is asked again}
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import UNKNOWN, check_mode, check_result, would
from ansible.module_utils.carapace_ceph_cluster import (
    Refused,
    ceph_command,
    ceph_required,
    osd_dump,
    incarnations,
    mon_ok_to_stop,
    osd_ok_to_stop,
    safe_to_destroy,
    set_noout,
    wait_until,
)


def rule_domains(timeout):
    """{rule id: (the CRUSH item its take step starts from, or None, and the failure domain its
    choose step names: host, osd, ...)}."""
    domains = {}
    for rule in ceph_required(["osd", "crush", "rule", "dump"], timeout) or []:
        domain, root = "host", None
        for stage in rule.get("steps", []):
            if stage.get("op") == "take" and root is None:
                root = stage.get("item")
            if str(stage.get("op", "")).startswith("choose") and stage.get("type"):
                domain = stage["type"]
        domains[int(rule.get("rule_id", -1))] = (root, domain)
    return domains


def unplaceable(ids, timeout):
    """The pools whose copies the cluster could not place without the OSDs ids: one sentence
    each (size against the failure domains under the rule's root that keep an up and in OSD)."""
    dump = osd_dump(timeout)
    usable = set(str(o.get("osd")) for o in dump.get("osds", []) if int(o.get("up", 0) or 0) and int(o.get("in", 0) or 0)) - set(ids)
    nodes = dict((n.get("id"), n) for n in ceph_required(["osd", "tree"], timeout).get("nodes", []))

    def holds(node):
        if node.get("type") == "osd":
            return str(node.get("id")) in usable
        return any(holds(nodes[c]) for c in node.get("children", []) if c in nodes)

    def under(root):
        """The nodes of the subtree of root (every node when the rule names none)."""
        if root is None or root not in nodes:
            return list(nodes.values())
        out, todo = [], [root]
        while todo:
            node = nodes.get(todo.pop())
            if node is None:
                continue
            out.append(node)
            todo.extend(node.get("children", []))
        return out

    domains = rule_domains(timeout)
    problems = []
    for pool in dump.get("pools", []):
        root, domain = domains.get(int(pool.get("crush_rule", -1)), (None, "host"))
        left = sorted(str(n.get("name")) for n in under(root) if n.get("type") == domain and holds(n))
        size = int(pool.get("size", 0) or 0)
        if size > len(left):
            where = ("%d up and in OSD%s" % (len(left), "" if len(left) == 1 else "s")) if domain == "osd" else \
                ("%d %s%s with up and in OSDs" % (len(left), domain, "" if len(left) == 1 else "s"))
            problems.append("pool %s keeps %d cop%s, one per %s, and without them %s would be left%s" % (
                pool.get("pool_name"), size, "y" if size == 1 else "ies", domain, where, " (%s)" % ", ".join(left) if left else ""))
    return problems


def destroy(module, p, checking, started):
    ids, timeout = [str(i) for i in p["ids"]], p["cli_timeout"]
    names = ", ".join("osd.%s" % i for i in ids)
    if not checking:
        ok, words, waited = wait_until(lambda: safe_to_destroy(ids, timeout), p["timeout"], p["interval"])
        if not ok:
            module.fail_json(msg="Ceph says %s may not be destroyed (asked for %d s): %s" % (names, waited, words), answer=words, waited=round(waited, 1))
        module.exit_json(changed=False, ok=True, answer=words, waited=round(waited, 1))
    ok, words = safe_to_destroy(ids, timeout)
    if ok:
        module.exit_json(changed=False, ok=True, answer=words, waited=round(time.time() - started, 1))
    problems = unplaceable(ids, timeout)
    if problems:
        module.fail_json(msg="Ceph would not say %s may be destroyed: their data has nowhere else to go: %s (Ceph says now: %s)" % (
            names, "; ".join(problems), words), answer=words)
    module.exit_json(changed=False, ok=None, answer=words, **{UNKNOWN: (
        "Ceph says now that %s may not be destroyed (%s): a real run marks them out first and waits up to %d s for their data to move, "
        "which the rest of the cluster has room for; whether Ceph then says yes is known only then" % (names, words, p["real_timeout"]))})


def main():
    module = AnsibleModule(
        argument_spec=dict(
            type=dict(type="str", choices=["mon", "mgr", "osd", "destroy"], required=True),
            ids=dict(type="list", elements="str", required=True),
            host_bucket=dict(type="str", default=""),
            why=dict(type="str", default="carapace"),
            timeout=dict(type="int", default=300),
            interval=dict(type="int", default=5),
            cli_timeout=dict(type="int", default=30),
            check_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    checking = check_mode(module)
    p["real_timeout"] = p["timeout"]
    if checking:
        p["timeout"] = min(p["timeout"], p["check_timeout"])
    kind, ids, timeout = p["type"], p["ids"], p["cli_timeout"]
    started = time.time()
    try:
        if kind == "destroy":
            destroy(module, p, checking, started)
        if kind == "mgr":
            dump = ceph_required(["mgr", "dump"], timeout)
            standbys = [s.get("name") for s in dump.get("standbys", [])]
            failed_over = False
            if dump.get("active_name") in ids and [s for s in standbys if s not in ids]:
                if checking:
                    would("hand the active manager mgr.%s over to a standby (ceph mgr fail)" % dump["active_name"])
                else:
                    rc, said = ceph_command(["mgr", "fail", dump["active_name"]], timeout)
                    if rc != 0:
                        module.fail_json(msg="ceph mgr fail %s: %s" % (dump["active_name"], said))
                failed_over = True
            module.exit_json(**check_result(changed=failed_over, ok=True, answer="a manager may stop (standbys: %s)" % (", ".join(standbys) or "none"),
                                            waited=0, before=incarnations(kind, ids, timeout)))
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
        module.exit_json(**check_result(changed=flag_set, ok=True, answer=words, waited=round(time.time() - started, 1), noout_set=flag_set, before=before))
    except Refused as err:
        module.fail_json(msg=str(err))


if __name__ == "__main__":
    main()
