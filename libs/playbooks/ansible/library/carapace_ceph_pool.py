#!/usr/bin/python3
# Carapace: a pool created or converged to what add_pool asks (never recreated), and a pool
# deleted by remove_pool once every check passed. Ceph answers 0 to several of these commands
# when they did nothing (`osd pool create` of an existing pool, `osd pool rm` of an unknown
# one, `osd crush rule create-replicated` of an existing rule), so every change is read back
# from `osd pool ls detail` (JSON only) and every decision is reported as a step.
"""Create, converge and delete Ceph pools."""

DOCUMENTATION = r"""
module: carapace_ceph_pool
short_description: Creates or converges a pool (add_pool), deletes one (remove_pool)
description:
  - Runs on a monitor host (admin keyring).
  - mode=add - refuses, before anything changes, a pool whose type, erasure-code profile or
    failure domain differ from what is asked, a profile of that name with other values, more
    copies (or chunks) than failure domains with up and in OSDs, a lower size without
    allow_size_decrease, another application already enabled. Then creates the pool when it
    is absent, or sets what differs - size, then min_size, the autoscale mode, pg_num,
    target_size_ratio, the application (with rbd pool init for rbd), allow_ec_overwrites for
    an erasure-coded rbd or cephfs pool, the quotas - each change read back and reported as a
    step. Nothing to change is a step too, and changed=false.
  - mode=wait - waits (clean_timeout) until every PG of the pool is active+clean.
  - mode=remove - deletes the pool once confirm_name equals name, it is not one of Ceph's own
    or of protected_pools, no CephFS uses it, it is no tier and has no nodelete flag, and it
    holds no object (RBD's own bookkeeping objects aside) unless allow_non_empty. Turns
    mon_allow_pool_delete on for the deletion only (marked in config-key
    carapace/pool_delete) and always puts it back. Removes the erasure-code profile that
    add_pool made for the pool (marked carapace/pool_profile/NAME) and the CRUSH rule Ceph made
    under the pool's name, when no other pool uses them. An absent pool is nothing to do.
  - mode=restore - the clean-up after a failed or canceled remove_pool - puts
    mon_allow_pool_delete back if a run left it marked.
  - Check mode changes nothing in Ceph: every refusal above is decided for real (from the
    same reads), and each change a real run would make is a step "would ..." (changed);
    mode=wait asks once and reports check_mode_unknown for a pool that does not exist yet
    or whose PGs are not all active+clean now (a real run would wait for them).
options:
  mode: {type: str, required: true, choices: [add, wait, remove, restore]}
  pool: {type: dict, default: {}, description: "add, wait - the PoolSpec of add_pool"}
  removal: {type: dict, default: {}, description: "remove - {name, confirm_name, allow_non_empty, protected_pools}"}
  clean_timeout: {type: int, default: 600}
  cli_timeout: {type: int, default: 30}
"""

import json
import re
import subprocess
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import UNKNOWN, check_mode, checking, tail
from ansible.module_utils.carapace_ceph_cluster import Refused, ceph_command, ceph_json, ceph_required, librados_session, step, use_librados, wait_until

RESERVED = (".mgr", "device_health_metrics", ".rgw.root", ".nfs")
POOL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")
DELETE_MARK = "carapace/pool_delete"
PROFILE_MARK = "carapace/pool_profile/"
# What `rbd pool init` and an RBD pool without images hold: not data.
RBD_BOOKKEEPING = ("rbd_info", "rbd_directory", "rbd_trash", "rbd_children", "rbd_mirroring", "rbd_mirror_leader", "rbd_namespace")
TYPES = {"replicated": 1, "erasure": 3}
TYPE_NAMES = {1: "replicated", 3: "erasure"}


# ---------------------------------------------------------------- reading


def pools(timeout):
    """{name: pool} of `osd pool ls detail`."""
    found = ceph_required(["osd", "pool", "ls", "detail"], timeout)
    return dict((p.get("pool_name"), p) for p in found if isinstance(p, dict))


def read_pool(name, timeout):
    return pools(timeout).get(name)


def flags(pool):
    return [f for f in str(pool.get("flags_names", "")).split(",") if f]


def rule_domain(rule):
    """(root, failure domain) of a CRUSH rule: the bucket it takes, the type it chooses."""
    root, domain = "", ""
    for s in rule.get("steps", []):
        if s.get("op") == "take" and not root:
            root = str(s.get("item_name", ""))
        if str(s.get("op", "")).startswith(("choose", "chooseleaf")) and s.get("op") not in ("set_choose_tries", "set_chooseleaf_tries") and not domain:
            domain = str(s.get("type", ""))
    return root, domain


def rules(timeout):
    """{rule id: rule} of `osd crush rule dump`."""
    return dict((int(r.get("rule_id")), r) for r in ceph_required(["osd", "crush", "rule", "dump"], timeout))


def failure_domains(domain, timeout):
    """The buckets of type domain under the root default (OSDs for `osd`) that hold an up and
    in OSD, and the types the tree has."""
    nodes = dict((n["id"], n) for n in ceph_required(["osd", "tree"], timeout).get("nodes", []))
    roots = [n for n in nodes.values() if n.get("type") == "root" and n.get("name") == "default"] or [n for n in nodes.values() if n.get("type") == "root"]

    def alive(node):
        if node.get("type") == "osd":
            return node.get("status") == "up" and float(node.get("reweight", 0) or 0) > 0
        return any(alive(nodes[c]) for c in node.get("children", []) if c in nodes)

    found, types, seen = [], set(), set()
    todo = list(roots)
    while todo:
        node = todo.pop()
        if node["id"] in seen:
            continue
        seen.add(node["id"])
        types.add(node.get("type"))
        if node.get("type") == domain:
            if alive(node):
                found.append(node.get("name"))
            continue
        todo.extend(nodes[c] for c in node.get("children", []) if c in nodes)
    return sorted(found), types


def profile_of(name, timeout):
    rc, data, err = ceph_json(["osd", "erasure-code-profile", "get", name], timeout)
    if rc == 2:
        return None
    if rc != 0 or not isinstance(data, dict):
        raise Refused("ceph osd erasure-code-profile get %s failed (exit %s): %s" % (name, rc, tail(err)))
    return data


def change(args, timeout):
    """Runs a command that changes the cluster; raises Refused with Ceph's words when it fails."""
    rc, said = ceph_command(args, timeout)
    if rc != 0:
        raise Refused("ceph %s failed (exit %s): %s" % (" ".join(str(a) for a in args), rc, tail(said, 5)))
    return said


def marks(prefix, timeout):
    rc, data, _ = ceph_json(["config-key", "dump", prefix], timeout)
    if rc != 0 or not isinstance(data, dict):
        return {}
    return dict((k, v) for k, v in data.items() if k.startswith(prefix))


# ---------------------------------------------------------------- add


def check_spec(spec):
    name = str(spec.get("name", ""))
    if not POOL_NAME.match(name) or name in RESERVED:
        raise Refused("%r is not a pool add_pool may make (Ceph's own pools and names starting with . or - are refused)" % name)
    if spec.get("type") not in TYPES:
        raise Refused("type must be replicated or erasure, got %r" % spec.get("type"))
    return name


def plan_placement(spec, timeout):
    """P1: the failure domains that could hold the copies; refused when too few."""
    domain = spec["crush_failure_domain"]
    found, types = failure_domains(domain, timeout)
    if domain not in types:
        raise Refused("the CRUSH tree has no bucket of type %r (it has: %s)" % (domain, ", ".join(sorted(t for t in types if t))))
    wanted = int(spec["size"] or 0)
    if wanted and len(found) < wanted:
        raise Refused("pool %s needs %d %ss with up and in OSDs for its %s, the cluster has %d (%s): its PGs would stay undersized"
                      % (spec["name"], wanted, domain, "copies" if spec["type"] == "replicated" else "k+m chunks", len(found), ", ".join(found) or "none"))
    return found


def replicated_rule(spec, timeout, steps, started):
    """The id of a replicated rule that takes the root default and places one copy per failure
    domain: replicated_rule when it does, else replicated_DOMAIN, made when absent."""
    domain = spec["crush_failure_domain"]
    candidates = sorted(rules(timeout).items(), key=lambda item: (item[1].get("rule_name") != "replicated_rule", item[0]))
    for rid, rule in candidates:
        if int(rule.get("type", 0)) == 1 and rule_domain(rule) == ("default", domain):
            return rid, rule.get("rule_name")
    name = "replicated_%s" % domain
    change(["osd", "crush", "rule", "create-replicated", name, "default", domain], timeout)
    for rid, rule in rules(timeout).items():
        if rule.get("rule_name") == name:
            if rule_domain(rule) != ("default", domain):
                raise Refused("the CRUSH rule %s exists and does not place one copy per %s under default: %s" % (name, domain, json.dumps(rule.get("steps"))))
            steps.append(step("CRUSH rule %s made: one copy per %s" % (name, domain), started, changed=True))
            return rid, name
    raise Refused("ceph osd crush rule create-replicated %s answered 0 and made no rule" % name)


def check_profile(spec, timeout):
    """P2: None when the profile is absent; refused when it exists with other values."""
    profile = profile_of(spec["ec_profile"], timeout)
    if profile is None:
        return None
    wanted = {"k": str(spec["ec_k"]), "m": str(spec["ec_m"]), "crush-failure-domain": spec["crush_failure_domain"]}
    differ = dict((k, profile.get(k, "")) for k, v in wanted.items() if str(profile.get(k, "")) != v)
    if differ:
        raise Refused("the erasure-code profile %s exists with %s, not %s: Carapace never overrides a profile (pools using it keep their layout); give another ec_profile"
                      % (spec["ec_profile"], ", ".join("%s=%s" % kv for kv in sorted(differ.items())), ", ".join("%s=%s" % (k, wanted[k]) for k in sorted(differ))))
    return profile


def refuse_existing(spec, pool, timeout):
    """P4's refusals on an existing pool, before anything changes."""
    name = spec["name"]
    problems = []
    kind = TYPE_NAMES.get(int(pool.get("type", 0)), str(pool.get("type")))
    if kind != spec["type"]:
        problems.append("it is %s, not %s (Ceph cannot change a pool's type)" % (kind, spec["type"]))
    elif spec["type"] == "erasure" and pool.get("erasure_code_profile") != spec["ec_profile"]:
        problems.append("it uses the erasure-code profile %s, not %s (Ceph cannot change it)" % (pool.get("erasure_code_profile"), spec["ec_profile"]))
    if not problems:
        rule = rules(timeout).get(int(pool.get("crush_rule", -1)))
        domain = rule_domain(rule)[1] if rule else ""
        if domain != spec["crush_failure_domain"]:
            problems.append("its CRUSH rule %s places one copy per %s, not per %s (a new rule would move all its data: not done by add_pool)"
                            % ((rule or {}).get("rule_name", pool.get("crush_rule")), domain or "?", spec["crush_failure_domain"]))
    if spec["type"] == "replicated" and spec["size"] and spec["size"] < int(pool.get("size", 0)) and not spec.get("allow_size_decrease"):
        problems.append("its size is %s; lowering it to %s keeps fewer copies of its data: give allow_size_decrease" % (pool.get("size"), spec["size"]))
    apps = sorted((pool.get("application_metadata") or {}).keys())
    if apps and spec["application"] not in apps:
        problems.append("the application %s is enabled on it, not %s (Carapace never replaces an application)" % (", ".join(apps), spec["application"]))
    if problems:
        raise Refused("pool %s exists and cannot be converged: %s; nothing changed" % (name, "; ".join(problems)))


def create(spec, timeout, steps):
    """P2-P3: the profile and the pool; read back."""
    started = time.time()
    name = spec["name"]
    args = ["osd", "pool", "create", name]
    if spec["pg_num"]:
        args += ["--pg_num", str(spec["pg_num"])]
    if spec["type"] == "erasure":
        if check_profile(spec, timeout) is None:
            change(["osd", "erasure-code-profile", "set", spec["ec_profile"], "k=%d" % spec["ec_k"], "m=%d" % spec["ec_m"],
                    "crush-failure-domain=%s" % spec["crush_failure_domain"]], timeout)
            change(["config-key", "set", PROFILE_MARK + spec["ec_profile"], name], timeout)
            check_profile(spec, timeout)
            steps.append(step("erasure-code profile %s made: k=%d m=%d, one chunk per %s" % (spec["ec_profile"], spec["ec_k"], spec["ec_m"], spec["crush_failure_domain"]), started, changed=True))
        args += ["--pool_type", "erasure", "--erasure_code_profile", spec["ec_profile"]]
    else:
        _, rule_name = replicated_rule(spec, timeout, steps, started)
        args += ["--pool_type", "replicated", "--rule", rule_name]
        if spec["size"]:
            args += ["--size", str(spec["size"])]
    args += ["--autoscale_mode", spec["pg_autoscale_mode"]]
    rc, said = ceph_command(args, timeout)
    if rc == 34:
        raise Refused("Ceph refuses the pool's PGs: %s" % tail(said, 3))
    if rc != 0:
        raise Refused("ceph %s failed (exit %s): %s" % (" ".join(args), rc, tail(said, 5)))
    pool = read_pool(name, timeout)
    if pool is None or int(pool.get("type", 0)) != TYPES[spec["type"]]:
        raise Refused("ceph osd pool create %s answered 0 (%s) but the pool is %s" % (name, tail(said, 1), "absent" if pool is None else "of type %s" % pool.get("type")))
    steps.append(step("pool %s created: %s, size %s, min_size %s, %d PGs, autoscale %s" % (
        name, describe_layout(spec), pool.get("size"), pool.get("min_size"), int(pool.get("pg_num", 0)), pool.get("pg_autoscale_mode")), started, changed=True))
    return pool


def describe_layout(spec):
    if spec["type"] == "erasure":
        return "erasure-coded k=%d m=%d (profile %s), one chunk per %s" % (spec["ec_k"], spec["ec_m"], spec["ec_profile"], spec["crush_failure_domain"])
    return "replicated, one copy per %s" % spec["crush_failure_domain"]


def converge(spec, pool, timeout, steps):
    """P4-P8 on a pool that exists: each difference set, read back, a step."""
    name = spec["name"]

    def setting(label, current, wanted, args, read, note=""):
        """Sets one value, reads the pool back (read(pool) must give wanted), reports a step."""
        started = time.time()
        if checking():
            steps.append(step("pool %s: %s would be %s → %s%s" % (name, label, current, wanted, note), started, changed=True))
            return pool
        change(args, timeout)
        now = read_pool(name, timeout) or {}
        if read(now) != wanted:
            raise Refused("pool %s: %s was set to %s but Ceph reads back %s" % (name, label, wanted, read(now)))
        steps.append(step("pool %s: %s %s → %s%s" % (name, label, current, wanted, note), started, changed=True))
        return now

    # size, then min_size (setting size resets min_size to Ceph's default for it)
    if spec["type"] == "replicated" and spec["size"] and int(pool.get("size", 0)) != spec["size"]:
        current = int(pool.get("size", 0))
        pool = setting("size", current, spec["size"], ["osd", "pool", "set", name, "size", str(spec["size"])],
                       lambda p: int(p.get("size", 0)), " (data will move)" if spec["size"] > current else " (fewer copies)")
    if spec["min_size"] and int(pool.get("min_size", 0)) != spec["min_size"]:
        pool = setting("min_size", int(pool.get("min_size", 0)), spec["min_size"], ["osd", "pool", "set", name, "min_size", str(spec["min_size"])],
                       lambda p: int(p.get("min_size", 0)))
    # P5: autoscale, pg_num, target_size_ratio
    if pool.get("pg_autoscale_mode") != spec["pg_autoscale_mode"]:
        pool = setting("pg_autoscale_mode", pool.get("pg_autoscale_mode"), spec["pg_autoscale_mode"],
                       ["osd", "pool", "set", name, "pg_autoscale_mode", spec["pg_autoscale_mode"]], lambda p: p.get("pg_autoscale_mode"))
    target = lambda p: int(p.get("pg_num_target", p.get("pg_num", 0)) or 0)  # noqa: E731
    if spec["pg_num"] and target(pool) != spec["pg_num"]:
        pool = setting("pg_num", target(pool), spec["pg_num"], ["osd", "pool", "set", name, "pg_num", str(spec["pg_num"])], target)
    if spec["target_size_ratio"] != "":
        wanted = float(spec["target_size_ratio"])
        ratio = lambda p: round(float((p.get("options") or {}).get("target_size_ratio", 0) or 0), 6)  # noqa: E731
        if ratio(pool) != round(wanted, 6):
            pool = setting("target_size_ratio", ratio(pool), round(wanted, 6), ["osd", "pool", "set", name, "target_size_ratio", spec["target_size_ratio"]], ratio)
    # P6: the application, never replaced
    apps = (pool.get("application_metadata") or {}).keys()
    if not apps and checking():
        steps.append(step("pool %s: application %s would be enabled%s" % (name, spec["application"], " (rbd pool init)" if spec["application"] == "rbd" else ""),
                          time.time(), changed=True))
    elif not apps:
        started = time.time()
        change(["osd", "pool", "application", "enable", name, spec["application"]], timeout)
        how = ""
        if spec["application"] == "rbd":
            rc, out, err = run_rbd_init(name, timeout)
            if rc != 0:
                raise Refused("rbd pool init %s failed (exit %s): %s" % (name, rc, tail(err or out, 5)))
            how = " (rbd pool init)"
        pool = read_pool(name, timeout) or {}
        if spec["application"] not in (pool.get("application_metadata") or {}):
            raise Refused("pool %s: the application %s was enabled but Ceph does not show it" % (name, spec["application"]))
        steps.append(step("pool %s: application %s enabled%s" % (name, spec["application"], how), started, changed=True))
    # P7: erasure-coded pools for RBD and CephFS need partial writes
    if spec["type"] == "erasure" and spec["application"] in ("rbd", "cephfs") and "ec_overwrites" not in flags(pool) and checking():
        steps.append(step("pool %s: allow_ec_overwrites would be turned on (for %s; it cannot be turned off)" % (name, spec["application"]), time.time(), changed=True))
    elif spec["type"] == "erasure" and spec["application"] in ("rbd", "cephfs") and "ec_overwrites" not in flags(pool):
        started = time.time()
        change(["osd", "pool", "set", name, "allow_ec_overwrites", "true"], timeout)
        pool = read_pool(name, timeout) or {}
        if "ec_overwrites" not in flags(pool):
            raise Refused("pool %s: allow_ec_overwrites was set but Ceph does not show the flag (%s)" % (name, pool.get("flags_names")))
        steps.append(step("pool %s: allow_ec_overwrites on (for %s; it cannot be turned off)" % (name, spec["application"]), started, changed=True))
    # P8: quotas (0: none)
    for key, field in (("max_bytes", "quota_max_bytes"), ("max_objects", "quota_max_objects")):
        if int(pool.get(field, 0) or 0) != int(spec[field]):
            pool = setting(field, int(pool.get(field, 0) or 0), int(spec[field]), ["osd", "pool", "set-quota", name, key, str(int(spec[field]))],
                           lambda p, f=field: int(p.get(f, 0) or 0))
    return pool


def run_rbd_init(name, timeout):
    try:
        done = subprocess.run(["timeout", str(timeout * 2), "rbd", "pool", "init", name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
        return done.returncode, done.stdout, done.stderr
    except FileNotFoundError as err:
        return 127, "", str(err)


def add(spec, timeout, steps):
    name = check_spec(spec)
    started = time.time()
    pool = read_pool(name, timeout)
    if pool is not None:
        refuse_existing(spec, pool, timeout)
    if spec["type"] == "erasure":
        check_profile(spec, timeout)
    found = plan_placement(spec, timeout) if pool is None or spec["size"] else []
    if found:
        where = "up and in OSDs" if spec["crush_failure_domain"] == "osd" else "%ss with up and in OSDs" % spec["crush_failure_domain"]
        steps.append(step("Ceph can place pool %s: %d %s (%s) for %d %s" % (
            name, len(found), where, ", ".join(found), spec["size"], "copies" if spec["type"] == "replicated" else "chunks"), started))
    if pool is None and checking():
        steps.append(step("pool %s would be created: %s, size %s, min_size %s, autoscale %s, application %s%s" % (
            name, describe_layout(spec), spec["size"] or "Ceph's default", spec["min_size"] or "Ceph's default", spec["pg_autoscale_mode"], spec["application"],
            ", quotas %d bytes / %d objects" % (spec["quota_max_bytes"], spec["quota_max_objects"]) if spec["quota_max_bytes"] or spec["quota_max_objects"] else ""),
            started, changed=True))
        return True, {"pool_name": name}
    if pool is None:
        pool = create(spec, timeout, steps)
    pool = converge(spec, pool, timeout, steps)
    changed = any(s["changed"] for s in steps)
    if not changed:
        steps.append(step("pool %s is already as asked (%s, size %s, min_size %s, autoscale %s, application %s, quotas %s bytes / %s objects): nothing changed" % (
            name, describe_layout(spec), pool.get("size"), pool.get("min_size"), pool.get("pg_autoscale_mode"),
            ", ".join(sorted((pool.get("application_metadata") or {}).keys())), pool.get("quota_max_bytes"), pool.get("quota_max_objects")), started))
    return changed, pool


def wait(spec, timeout, clean_timeout):
    """P9: every PG of the pool active+clean."""
    name = spec["name"]
    started = time.time()
    count = [0]

    def check():
        rc, data, err = ceph_json(["pg", "ls-by-pool", name], timeout)
        if rc != 0 or data is None:
            raise Refused("ceph pg ls-by-pool %s failed (exit %s): %s" % (name, rc, tail(err, 2)))
        stats = data.get("pg_stats", []) if isinstance(data, dict) else data
        states = {}
        for pg in stats or []:
            states[pg.get("state", "?")] = states.get(pg.get("state", "?"), 0) + 1
        count[0] = len(stats or [])
        ok = bool(stats) and all(str(s).startswith("active+clean") for s in states)
        return ok, ", ".join("%d %s" % (n, s) for s, n in sorted(states.items())) or "no PGs yet"

    if checking():
        if read_pool(name, timeout) is None:
            return None, "pool %s does not exist in check mode: whether its PGs become active+clean is known only after a real run" % name
        ok, words = check()
        if not ok:
            return None, "pool %s: its PGs are not all active+clean now (%s); a real run would wait up to %d s for them" % (name, words, clean_timeout)
        return step("pool %s: its %d PGs are active+clean" % (name, count[0]), started), None
    ok, words, waited = wait_until(check, clean_timeout, interval=2.0)
    if not ok:
        raise Refused("pool %s: its PGs are not all active+clean after %d s: %s" % (name, clean_timeout, words))
    return step("pool %s: its %d PGs active+clean after %.1f s" % (name, count[0], waited), started), None


# ---------------------------------------------------------------- remove


def objects_in(name, limit=1000):
    """(object names other than RBD's bookkeeping, the bookkeeping objects found, how it was
    asked): listed through librados (every namespace), else `rados ls --all`; at most limit
    objects are read, and the listing stops at the tenth other object."""
    others, own = [], []

    def seen_one(key, nspace=""):
        if key in RBD_BOOKKEEPING and not nspace:
            own.append(key)
        else:
            others.append(("%s/" % nspace if nspace else "") + key)
        return len(own) + len(others) >= limit or len(others) >= 10

    try:
        import rados  # pylint: disable=import-outside-toplevel
    except ImportError:
        rados = None
    if rados is not None:
        # the module's librados session when it has one, else a connection of its own
        cluster = librados_session()
        own_connection = cluster is None
        if own_connection:
            cluster = rados.Rados(conffile="/etc/ceph/ceph.conf", rados_id="admin")
            cluster.connect(timeout=20)
        try:
            ioctx = cluster.open_ioctx(name)
            try:
                ioctx.set_namespace(rados.LIBRADOS_ALL_NSPACES)
                for obj in ioctx.list_objects():
                    if seen_one(obj.key, obj.nspace):
                        break
            finally:
                ioctx.close()
        finally:
            if own_connection:
                cluster.shutdown()
        return others, own, "librados"
    proc = subprocess.Popen(["timeout", "120", "rados", "-p", name, "ls", "--all"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            parts = line.rstrip("\n").split("\t")
            if parts[-1] and seen_one(parts[-1], parts[0] if len(parts) > 1 else ""):
                break
    finally:
        proc.kill()
        proc.wait()
    return others, own, "rados ls"


def deletion_setting(timeout):
    """(every monitor's mon_allow_pool_delete, {mon: value} of those set by a file). A value from
    a monitor's ceph.conf is what `config show` reports; any other is read from the central
    configuration (mon.NAME, then mon, then global), because `config show` reports what the
    daemons last told the manager, a second or more behind a `config set` or `config rm`."""
    mons = [m.get("name") for m in ceph_required(["mon", "dump"], timeout).get("mons", [])]
    central = dict(((e.get("section"), e.get("name")), str(e.get("value"))) for e in ceph_required(["config", "dump"], timeout))
    values, files = {}, {}
    for mon in mons:
        rc, data, err = ceph_json(["config", "show", "mon.%s" % mon], timeout)
        if rc != 0 or not isinstance(data, list):
            raise Refused("ceph config show mon.%s failed (exit %s): %s" % (mon, rc, tail(err, 2)))
        entry = next((e for e in data if e.get("name") == "mon_allow_pool_delete"), None)
        if entry and entry.get("source") == "file":
            files[mon] = entry.get("value")
            value = entry.get("value")
        else:
            value = next((central[(section, "mon_allow_pool_delete")] for section in ("mon.%s" % mon, "mon", "global")
                          if (section, "mon_allow_pool_delete") in central), "false")
        values[mon] = str(value).lower() == "true"
    return values, files


def central_value(timeout):
    """The mon_allow_pool_delete of the central configuration's mon section, or None."""
    for entry in ceph_required(["config", "dump"], timeout):
        if entry.get("section") == "mon" and entry.get("name") == "mon_allow_pool_delete":
            return str(entry.get("value"))
    return None


def allow_deletion(timeout, steps):
    """D3: turns mon_allow_pool_delete on, marked; False when it already was (not Carapace's)."""
    started = time.time()
    values, files = deletion_setting(timeout)
    if files and not all(values.values()):
        raise Refused("mon_allow_pool_delete is set in the ceph.conf file of %s (%s), which wins over Ceph's central configuration: remove it there first; nothing changed"
                      % (", ".join("mon.%s" % m for m in sorted(files)), ", ".join("%s=%s" % kv for kv in sorted(files.items()))))
    if all(values.values()):
        steps.append(step("mon_allow_pool_delete is already true on every monitor (not Carapace's: left as it is)", started))
        return False
    previous = central_value(timeout)
    change(["config-key", "set", DELETE_MARK, json.dumps({"previous": previous, "since": int(time.time())})], timeout)
    change(["config", "set", "mon", "mon_allow_pool_delete", "true"], timeout)
    steps.append(step("mon_allow_pool_delete true for the deletion (was %s)" % ("unset" if previous is None else previous), started, changed=True))
    return True


def restore_deletion(timeout):
    """D5: mon_allow_pool_delete back to what it was, if Carapace's mark says it changed it."""
    started = time.time()
    found = marks(DELETE_MARK, timeout).get(DELETE_MARK)
    if found is None:
        return None
    try:
        previous = json.loads(found).get("previous")
    except (ValueError, AttributeError):
        previous = None
    if previous is None:
        change(["config", "rm", "mon", "mon_allow_pool_delete"], timeout)
    else:
        change(["config", "set", "mon", "mon_allow_pool_delete", str(previous)], timeout)
    if central_value(timeout) != previous:
        raise Refused("mon_allow_pool_delete was put back to %s but Ceph's configuration says %s" % (previous, central_value(timeout)))
    change(["config-key", "rm", DELETE_MARK], timeout)
    return step("mon_allow_pool_delete back to %s" % ("unset (false)" if previous is None else previous), started, changed=True)


def remove_pool(removal, timeout, steps):
    name = str(removal.get("name", ""))
    started = time.time()
    if not POOL_NAME.match(name):
        raise Refused("%r is not a pool name" % name)
    if str(removal.get("confirm_name", "")) != name:
        raise Refused("confirm_name %r is not the pool's name %r: nothing deleted" % (removal.get("confirm_name"), name))
    if name in RESERVED:
        raise Refused("%s is a pool of Ceph itself: not deleted" % name)
    if name in (removal.get("protected_pools") or []):
        raise Refused("%s is a pool of the OpenStack (cinder) integration: not deleted without allow_cinder_pools" % name)
    existing = pools(timeout)
    pool = existing.get(name)
    if pool is None:
        steps.append(step("pool %s does not exist: nothing to do" % name, started))
        return False
    # D1: Ceph's own protections, asked first
    problems = []
    for fs in ceph_required(["fs", "ls"], timeout) or []:
        if fs.get("metadata_pool") == name or name in (fs.get("data_pools") or []):
            problems.append("the CephFS %s uses it" % fs.get("name"))
    if int(pool.get("tier_of", -1)) >= 0 or pool.get("tiers"):
        problems.append("it is a cache tier or has tiers")
    if "nodelete" in flags(pool):
        problems.append("its nodelete flag is set")
    if problems:
        raise Refused("pool %s is not deleted: %s" % (name, "; ".join(problems)))
    steps.append(step("pool %s: not one of Ceph's own%s, no CephFS uses it, no tier, no nodelete flag" % (
        name, "" if not removal.get("protected_pools") else " nor of the cinder integration"), started))
    # D2: emptiness: Ceph's statistics, and the objects themselves (the statistics lag a few seconds)
    started = time.time()
    stats = next((p.get("stats", {}) for p in ceph_required(["df", "detail"], timeout).get("pools", []) if p.get("name") == name), {})
    others, own, how = objects_in(name)
    listed = ("objects " + ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")) if others else \
        ("nothing but RBD's own %s" % ", ".join(own) if own else "no object")
    said = "%s lists %s; Ceph's statistics: %s objects, %s bytes stored" % (how, listed, stats.get("objects", "?"), stats.get("stored", "?"))
    if others and not removal.get("allow_non_empty"):
        raise Refused("pool %s holds objects (%s): not deleted without allow_non_empty" % (name, said))
    steps.append(step(("Ceph says pool %s is empty: %s" if not others else "pool %s holds objects, deleted as allow_non_empty says: %s") % (name, said), started))
    rule_id = int(pool.get("crush_rule", -1))
    profile = pool.get("erasure_code_profile") or ""
    if checking():
        values, files = deletion_setting(timeout)
        if files and not all(values.values()):
            raise Refused("mon_allow_pool_delete is set in the ceph.conf file of %s (%s), which wins over Ceph's central configuration: remove it there first; nothing changed"
                          % (", ".join("mon.%s" % m for m in sorted(files)), ", ".join("%s=%s" % kv for kv in sorted(files.items()))))
        started = time.time()
        if not all(values.values()):
            steps.append(step("mon_allow_pool_delete would be true for the deletion, and put back after it", started, changed=True))
        steps.append(step("pool %s would be deleted%s" % (name, ", and what add_pool or Ceph made only for it (its CRUSH rule, its erasure-code profile) when nothing else uses it"
                                                         if profile else ""), started, changed=True))
        return True
    # D3-D5
    marked = False
    failure = None
    try:
        # a failure inside allow_deletion may leave its mark: put back below all the same
        marked = None
        marked = allow_deletion(timeout, steps)
        started = time.time()

        # a monitor may take a moment to apply the setting: asked again while Ceph says deletion is disabled
        deadline = time.time() + 30
        while True:
            rc, said = ceph_command(["osd", "pool", "rm", name, name, "--yes-i-really-really-mean-it"], timeout)
            if rc == 0 or "pool deletion is disabled" not in said or time.time() >= deadline:
                break
            time.sleep(1)
        if rc != 0:
            raise Refused("ceph osd pool rm %s failed (exit %s): %s" % (name, rc, tail(said, 3)))
        if read_pool(name, timeout) is not None:
            raise Refused("ceph osd pool rm %s answered 0 but the pool is still there" % name)
        steps.append(step("pool %s deleted" % name, started, changed=True))
    except Refused as err:
        failure = err
    # D5, also after a failure: a failure to put the setting back is reported with the first
    if marked or marked is None:
        try:
            back = restore_deletion(timeout)
        except Refused as err:
            raise Refused("%s%s (cleanup.yml tries again)" % ("%s; then " % failure if failure else "", err))
        if back:
            steps.append(back)
    if failure is not None:
        raise failure
    # D6: what Carapace (or Ceph, for the pool) made for it and nothing else uses
    steps.extend(leftovers(name, rule_id, profile, timeout))
    return True


def leftovers(name, rule_id, profile, timeout):
    started = time.time()
    steps = []
    remaining = pools(timeout).values()
    rule = rules(timeout).get(rule_id)
    if rule and rule.get("rule_name") == name and int(rule.get("type", 0)) == 3 and not any(int(p.get("crush_rule", -1)) == rule_id for p in remaining):
        change(["osd", "crush", "rule", "rm", name], timeout)
        steps.append(step("CRUSH rule %s (made by Ceph for the pool) removed" % name, started, changed=True))
    if profile:
        mark = marks(PROFILE_MARK + profile, timeout).get(PROFILE_MARK + profile)
        users = sorted(p.get("pool_name") for p in remaining if p.get("erasure_code_profile") == profile)
        if mark is not None and not users:
            change(["osd", "erasure-code-profile", "rm", profile], timeout)
            ceph_command(["config-key", "rm", PROFILE_MARK + profile], timeout)
            steps.append(step("erasure-code profile %s (made by add_pool) removed" % profile, started, changed=True))
        else:
            steps.append(step("erasure-code profile %s kept (%s)" % (profile, "pools %s use it" % ", ".join(users) if users else "not made by Carapace"), started))
    rc, auth, _ = ceph_json(["auth", "ls"], timeout)
    named = []
    if rc == 0 and isinstance(auth, dict):
        for entry in auth.get("auth_dump", []):
            caps = " ".join(str(v) for v in (entry.get("caps") or {}).values())
            if re.search(r"pool=%s(\s|,|$)" % re.escape(name), caps):
                named.append(entry.get("entity"))
    if named:
        steps.append(step("cephx users whose caps name pool %s (kept): %s" % (name, ", ".join(sorted(named))), started))
    return steps


# ---------------------------------------------------------------- main


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", required=True, choices=["add", "wait", "remove", "restore"]),
            pool=dict(type="dict", default={}),
            removal=dict(type="dict", default={}),
            clean_timeout=dict(type="int", default=600),
            cli_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    timeout = p["cli_timeout"]
    steps = []
    check_mode(module)
    # many short questions to the cluster: one librados connection, not a ceph process each
    # (`osd pool create` and `osd pool rm`, with optional and flag arguments, go through the CLI)
    use_librados(timeout)
    started = time.time()
    try:
        if p["mode"] in ("add", "wait"):
            spec = dict(p["pool"])
            for key in ("size", "min_size", "ec_k", "ec_m", "pg_num", "quota_max_bytes", "quota_max_objects"):
                spec[key] = int(spec.get(key) or 0)
            for key in ("name", "type", "ec_profile", "crush_failure_domain", "pg_autoscale_mode", "target_size_ratio", "application"):
                spec[key] = str(spec.get(key) if spec.get(key) is not None else "")
            if p["mode"] == "wait":
                done, unknown = wait(spec, timeout, p["clean_timeout"])
                if unknown:
                    module.exit_json(changed=False, carapace_steps=steps, **{UNKNOWN: unknown})
                steps.append(done)
                module.exit_json(changed=False, carapace_steps=steps)
            changed, pool = add(spec, timeout, steps)
            module.exit_json(changed=changed, carapace_steps=steps, pool=dict((k, pool.get(k)) for k in (
                "pool_name", "type", "size", "min_size", "crush_rule", "erasure_code_profile", "pg_autoscale_mode", "pg_num",
                "quota_max_bytes", "quota_max_objects", "application_metadata", "flags_names")))
        if p["mode"] == "remove":
            changed = remove_pool(p["removal"], timeout, steps)
            module.exit_json(changed=changed, carapace_steps=steps)
        if checking():
            found = marks(DELETE_MARK, timeout).get(DELETE_MARK)
            module.exit_json(changed=found is not None, carapace_steps=[step("mon_allow_pool_delete would be put back (a run left it marked: %s)" % found, started, changed=True)
                                                                         if found is not None else step("mon_allow_pool_delete: nothing Carapace changed", started)])
        back = restore_deletion(timeout)
        module.exit_json(changed=back is not None, carapace_steps=[back] if back else [step("mon_allow_pool_delete: nothing Carapace changed", started)])
    except Refused as err:
        # the steps done so far, then the refusal itself (the task's failed step follows)
        steps.append(step("Refused: %s" % err, started, result="error"))
        module.fail_json(msg=str(err), carapace_steps=steps)


if __name__ == "__main__":
    main()
