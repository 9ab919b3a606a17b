#!/usr/bin/python3
# Carapace: Ceph configuration options on a running cluster (update_ceph_configuration), on a
# monitor host: which options go to the monitors' central configuration and which to
# ceph.conf, setting the central ones, and which daemons must restart to read a change.
"""Plan, apply and check Ceph configuration options."""

DOCUMENTATION = r"""
module: carapace_ceph_config
short_description: Ceph configuration options - plan, apply centrally, and find what must restart
description:
  - Runs on a monitor host (admin keyring, /etc/ceph/ceph.conf).
  - mode=plan asks Ceph about every option (ceph config help) and changes nothing. It fails,
    naming each, for an option Ceph does not know and a value that is not of the option's
    type. An option goes to ceph.conf when the monitors cannot keep it (flag no_mon_update)
    or when ceph.conf already sets it (a daemon prefers its ceph.conf to the monitors), to
    the central configuration otherwise. Returns conf_set, conf_remove, central_set,
    central_remove, and info (name -> type, flags, services, runtime).
  - mode=apply sets and removes the central options whose stored value differs (ceph config
    set / rm); returns one step per option of the run, saying what changed or that nothing did.
  - mode=running, on every host, asks each daemon running there (its admin socket under
    run_dir) the value it runs with of each option compared (every ceph.conf option, and
    the central ones not applied at runtime, which the monitors push themselves); a ceph.conf
    option that differs from its file's value and may change at runtime is set there and then.
    Returns running {daemon: {name: value}}.
  - mode=restarts, on a monitor host, compares those values (running, the results of every
    host) with the ones each daemon should have: the central value for it (ceph config get:
    the monitors' value, or Ceph's default once removed), or the ceph.conf one; a daemon that
    differs is marked to restart. Returns the plan of every daemon (as carapace_ceph_daemons),
    one step per daemon marked, with the reason, and one per daemon not running. Options only
    read when a daemon or the cluster is created (flags create, cluster_create) restart nothing.
  - Check mode changes nothing: plan as always; apply reports each option it would set or
    remove (a step "would ...", changed); running asks the daemons for real and reports what
    it would set at runtime (and counts it as set); restarts compares with the values the
    run would give (an option to set: its value) and reports check_mode_unknown for a daemon
    whose value comes from a central option to remove (Ceph's default, or a broader
    section's, is known only once it is removed).
options:
  mode: {type: str, required: true, choices: [plan, apply, running, restarts]}
  set: {type: list, elements: dict, default: [], description: "[{section, name, value}] of the run"}
  remove: {type: list, elements: dict, default: [], description: "[{section, name}] of the run"}
  plan: {type: dict, default: {}, description: the result of mode=plan (apply, running, restarts)}
  running: {type: list, elements: raw, default: [], description: "restarts: the running results of mode=running, one per host"}
  run_dir: {type: path, default: /var/run/ceph, description: "running: where the daemons' admin sockets are"}
  hosts: {type: list, elements: str, default: [], description: "restarts: the short names of the configuration's hosts"}
  conf_path: {type: path, default: /etc/ceph/ceph.conf}
  cli_timeout: {type: int, default: 30}
"""

import glob
import json
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import UNKNOWN, ceph, check_mode, checking, run
from ansible.module_utils.carapace_ceph_cluster import Refused, ceph_command, ceph_json, ceph_required, plan_daemons, step
from ansible.module_utils.carapace_ceph_options import conf_keys, normalize, option_key, same_value

NO_RESTART_FLAGS = ("create", "cluster_create")


def describe(option):
    return "%s %s" % (option["section"], option["name"])


def option_info(name, timeout):
    rc, data, err = ceph_json(["config", "help", name], timeout)
    if rc != 0 or not isinstance(data, dict):
        return None
    flags = [str(f) for f in data.get("flags") or []]
    return {
        "type": str(data.get("type", "str")),
        "flags": flags,
        "services": [str(s) for s in data.get("services") or []],
        "runtime": bool(data.get("can_update_at_runtime", "runtime" in flags)),
    }


def plan(p):
    timeout = p["cli_timeout"]
    try:
        with open(p["conf_path"], encoding="utf-8") as handle:
            in_conf = conf_keys(handle.read())
    except OSError as err:
        raise Refused("cannot read %s: %s" % (p["conf_path"], err))
    info, problems = {}, []
    for option in p["set"] + p["remove"]:
        name = option["name"]
        if name not in info:
            found = option_info(name, timeout)
            if found is None:
                problems.append("%s: Ceph knows no option %s" % (describe(option), name))
                continue
            info[name] = found
        if option in p["set"]:
            try:
                normalize(info[name]["type"], option["value"])
            except ValueError:
                problems.append("%s: %r is not a value of type %s" % (describe(option), option["value"], info[name]["type"]))
    if problems:
        raise Refused("; ".join(problems))

    def in_file(option):
        return "no_mon_update" in info[option["name"]]["flags"] or option_key(option["name"]) in in_conf

    return {
        "conf_set": [o for o in p["set"] if in_file(o)],
        "conf_remove": [o for o in p["remove"] if in_file(o)],
        "central_set": [o for o in p["set"] if not in_file(o)],
        "central_remove": [o for o in p["remove"] if not in_file(o)],
        "info": info,
    }


def stored_central(timeout):
    """{(section, name): value} of the monitors' central configuration (without masks)."""
    stored = {}
    for entry in ceph_required(["config", "dump"], timeout) or []:
        if isinstance(entry, dict) and not entry.get("mask"):
            stored[(str(entry.get("section")), str(entry.get("name")))] = str(entry.get("value", ""))
    return stored


def needs_restart_note(info):
    if any(flag in info["flags"] for flag in NO_RESTART_FLAGS):
        return "only read when a daemon or the cluster is created"
    return "read at start: the daemons it applies to are restarted" if not info["runtime"] else "applied at runtime"


def apply(p, the_plan):
    timeout = p["cli_timeout"]
    stored = stored_central(timeout)
    info = the_plan["info"]
    steps, changed = [], False
    for option in the_plan["central_set"]:
        kind = info[option["name"]]["type"]
        current = stored.get((option["section"], option["name"]))
        if current is not None and same_value(kind, current, option["value"]):
            steps.append(step("%s = %s: already set centrally, no change" % (describe(option), option["value"])))
            continue
        if not checking():
            rc, answer = ceph_command(["config", "set", option["section"], option["name"], option["value"]], timeout)
            if rc != 0:
                raise Refused("ceph config set %s %s %s refused it: %s" % (option["section"], option["name"], option["value"], answer or "exit %s" % rc))
        changed = True
        steps.append(step("%s = %s: %s centrally (was %s; %s)" % (describe(option), option["value"], "would be set" if checking() else "set",
                                                                 current if current is not None else "not set", needs_restart_note(info[option["name"]])), changed=True))
    for option in the_plan["central_remove"]:
        if (option["section"], option["name"]) not in stored:
            steps.append(step("%s: not set centrally, no change" % describe(option)))
            continue
        if not checking():
            rc, answer = ceph_command(["config", "rm", option["section"], option["name"]], timeout)
            if rc != 0:
                raise Refused("ceph config rm %s %s refused it: %s" % (option["section"], option["name"], answer or "exit %s" % rc))
        changed = True
        steps.append(step("%s: %s centrally (was %s; %s)" % (describe(option), "would be removed" if checking() else "removed",
                                                             stored[(option["section"], option["name"])], needs_restart_note(info[option["name"]])), changed=True))
    for option in the_plan["conf_set"]:
        steps.append(step("%s = %s: in ceph.conf on every host (%s; %s)" % (
            describe(option), option["value"],
            "the monitors cannot keep it" if "no_mon_update" in info[option["name"]]["flags"] else "ceph.conf already sets it",
            needs_restart_note(info[option["name"]]))))
    for option in the_plan["conf_remove"]:
        steps.append(step("%s: removed from ceph.conf on every host" % describe(option)))
    return changed, steps


def applies_to(option, info, daemon):
    """Whether option (of section) is one daemon {type, id} reads."""
    services = [s for s in info["services"] if s != "common"]
    if services and daemon["type"] not in services:
        return False
    section = option["section"]
    return section == "global" or section == daemon["type"] or section == "%s.%s" % (daemon["type"], daemon["id"])


def checked_options(the_plan):
    """[(option, in_conf)] whose running value is compared: every ceph.conf option (a daemon
    reads its file only at start) and the central options not applied at runtime (the
    monitors push the others themselves), less those only read at creation."""
    info = the_plan["info"]
    checks = [(o, True) for o in the_plan["conf_set"] + the_plan["conf_remove"]]
    checks += [(o, False) for o in the_plan["central_set"] + the_plan["central_remove"] if not info[o["name"]]["runtime"]]
    return [(o, c) for o, c in checks if not any(flag in info[o["name"]]["flags"] for flag in NO_RESTART_FLAGS)]


def local_daemons(run_dir):
    """The daemons running on this host: {type, id, asok} of their admin sockets."""
    found = []
    for path in sorted(glob.glob(os.path.join(run_dir, "ceph-*.asok"))):
        match = re.match(r"^ceph-(mon|mgr|osd)\.(.+)\.asok$", os.path.basename(path))
        if match:
            found.append({"type": match.group(1), "id": match.group(2), "asok": path})
    return found


def asok(path, args, timeout):
    return run(["timeout", str(timeout), "ceph", "--admin-daemon", path] + list(args), timeout=timeout + 5)


def running(p, the_plan):
    """On one host: the value each local daemon runs with of each option compared; a ceph.conf
    option that differs and may change at runtime is set there and then."""
    timeout = p["cli_timeout"]
    info = the_plan["info"]
    values, steps, changed = {}, [], False
    for daemon in local_daemons(p["run_dir"]):
        key = "%s.%s" % (daemon["type"], daemon["id"])
        for option, in_conf in checked_options(the_plan):
            option_info_ = info[option["name"]]
            if not applies_to(option, option_info_, daemon):
                continue
            rc, out, err = asok(daemon["asok"], ["config", "get", option["name"]], timeout)
            try:
                value = str(json.loads(out)[option["name"]]) if rc == 0 else None
            except (ValueError, KeyError, TypeError):
                value = None
            if value is None:
                # a socket left by a daemon that stopped: it is not running
                break
            if in_conf and "value" in option and option_info_["runtime"] and not same_value(option_info_["type"], value, option["value"]) and checking():
                changed = True
                steps.append(step("%s: %s %s → %s, would be applied at runtime" % (key, option["name"], value, option["value"]), changed=True))
                value = option["value"]
            elif in_conf and "value" in option and option_info_["runtime"] and not same_value(option_info_["type"], value, option["value"]):
                rc, out, err = asok(daemon["asok"], ["config", "set", option["name"], option["value"]], timeout)
                if rc != 0:
                    raise Refused("ceph daemon %s config set %s %s failed: %s" % (key, option["name"], option["value"], (err or out).strip() or "exit %s" % rc))
                changed = True
                steps.append(step("%s: %s %s → %s, applied at runtime" % (key, option["name"], value, option["value"]), changed=True))
                value = option["value"]
            values.setdefault(key, {})[option["name"]] = value
    if not steps:
        steps.append(step("Nothing to apply at runtime on this host"))
    return changed, values, steps


class Unknowable(Exception):
    """Check mode: the value a daemon should run with is known only after the real change."""


def wanted_value(key, option, in_conf, timeout, stored=None):
    """The value daemon key should run with: a ceph.conf option's own value, else what the
    monitors give that daemon (their value, or Ceph's default once removed). In check mode
    (stored: the central configuration now, nothing applied) an option to set gives its
    value, a stored option to remove raises Unknowable."""
    if in_conf and "value" in option:
        return option["value"]
    if stored is not None and "value" in option:
        return option["value"]
    if stored is not None and (option["section"], option["name"]) in stored:
        raise Unknowable("%s would be removed centrally: the value %s then runs with (Ceph's default, or a broader section's) is known only once it is" % (
            describe(option), key))
    rc, out, err = ceph(["config", "get", key, option["name"]], timeout=timeout, check=False)
    if rc != 0:
        raise Refused("ceph config get %s %s failed: %s" % (key, option["name"], (err or "").strip() or "exit %s" % rc))
    return out.strip()


def restarts(p, the_plan):
    timeout = p["cli_timeout"]
    info = the_plan["info"]
    running_values = {}
    for found in p["running"]:
        if isinstance(found, dict):
            running_values.update(found)
    daemons = plan_daemons(lambda d: False, timeout)
    stored = stored_central(timeout) if checking() else None
    reasons, down, steps, unknown = {}, set(), [], []
    for option, in_conf in checked_options(the_plan):
        for daemon in daemons:
            key = "%s.%s" % (daemon["type"], daemon["id"])
            if not applies_to(option, info[option["name"]], daemon):
                continue
            value = running_values.get(key, {}).get(option["name"])
            if value is None:
                down.add(key)
                continue
            try:
                wanted = wanted_value(key, option, in_conf, timeout, stored)
            except Unknowable as err:
                unknown.append(str(err))
                continue
            if not same_value(info[option["name"]]["type"], value, wanted):
                reasons.setdefault(key, []).append("%s is %s, should be %s" % (option["name"], value, wanted))
    for option in p["set"] + p["remove"]:
        if any(flag in info[option["name"]]["flags"] for flag in NO_RESTART_FLAGS):
            steps.append(step("%s: only read when a daemon or the cluster is created, nothing restarts" % describe(option)))
    for daemon in daemons:
        key = "%s.%s" % (daemon["type"], daemon["id"])
        daemon["restart"] = key in reasons
        if key in reasons:
            steps.append(step("%s on %s: to restart, %s (read at start)" % (key, daemon["host"] or "an unknown host", "; ".join(reasons[key]))))
    for key in sorted(down):
        steps.append(step("%s: not running, reads the options when it starts" % key))
    if not reasons:
        steps.append(step("No daemon needs a restart"))
    elsewhere = [d for d in daemons if d["restart"] and d["host"] not in p["hosts"]]
    if elsewhere:
        raise Refused("daemons run on hosts this configuration does not hold, so they could not be restarted: %s" % (
            ", ".join("%s.%s on %s" % (d["type"], d["id"], d["host"] or "an unknown host") for d in elsewhere)))
    return daemons, steps, unknown


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", required=True, choices=["plan", "apply", "running", "restarts"]),
            set=dict(type="list", elements="dict", default=[]),
            remove=dict(type="list", elements="dict", default=[]),
            plan=dict(type="dict", default={}),
            hosts=dict(type="list", elements="str", default=[]),
            running=dict(type="list", elements="raw", default=[]),
            run_dir=dict(type="path", default="/var/run/ceph"),
            conf_path=dict(type="path", default="/etc/ceph/ceph.conf"),
            cli_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    check_mode(module)
    for option in p["set"] + p["remove"]:
        if not isinstance(option.get("section"), str) or not isinstance(option.get("name"), str):
            module.fail_json(msg="every option needs a section and a name, got %s" % json.dumps(option))
    for option in p["set"]:
        if not isinstance(option.get("value"), str):
            module.fail_json(msg="an option to set needs a value, got %s" % json.dumps(option))
    try:
        if p["mode"] == "plan":
            module.exit_json(changed=False, **plan(p))
        the_plan = p["plan"]
        for key in ("conf_set", "conf_remove", "central_set", "central_remove", "info"):
            if key not in the_plan:
                module.fail_json(msg="plan lacks %s: give the result of mode=plan" % key)
        if p["mode"] == "apply":
            changed, steps = apply(p, the_plan)
            module.exit_json(changed=changed, carapace_steps=steps)
        if p["mode"] == "running":
            changed, values, steps = running(p, the_plan)
            module.exit_json(changed=changed, running=values, carapace_steps=steps)
        daemons, steps, unknown = restarts(p, the_plan)
        module.exit_json(changed=False, daemons=daemons, carapace_steps=steps, **({UNKNOWN: "; ".join(unknown)} if unknown else {}))
    except Refused as err:
        module.fail_json(msg=str(err))


if __name__ == "__main__":
    main()
