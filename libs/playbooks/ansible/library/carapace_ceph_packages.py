#!/usr/bin/python3
# Carapace: Ceph's packages of a host moved to another version, without starting or
# restarting any Ceph daemon (the playbook restarts them one at a time, each behind its gate).
"""Find or install the Ceph version a package source offers."""

DOCUMENTATION = r"""
module: carapace_ceph_packages
short_description: Finds, then installs, the Ceph version a package source offers
description:
  - mode=check changes nothing: it reads the source into a scratch apt state (its own lists,
    the source's key) and answers which versions of ceph-osd the source offers, the one
    the upgrade would install (target, else the highest), and the Ceph packages installed.
    With source kind distribution it refreshes the host's own package lists first.
  - mode=install writes the source (/etc/apt/sources.list.d/carapace-ceph.sources and its
    key; an optional pin in /etc/apt/preferences.d/carapace-ceph), refreshes its lists, and
    installs every installed package built from Ceph's source at the exact version given,
    with a policy-rc.d that denies every action on a ceph unit (the packages would start
    the targets, which would start an OSD stopped by the operator on the new binary) and
    allows the others (openssh-server must restart itself when Debian's upgrade replaces it).
    Installed Ceph packages are then pinned at that version
    (/etc/apt/preferences.d/carapace-ceph-version) so that no later apt upgrade moves them.
    A host already at that version changes nothing.
  - mode=simulate changes nothing: `apt-get -s install --no-install-recommends` of packages
    from the host's package lists as they are (cluster_deploy's preview, where apt's own
    check mode would need python3-apt on the host): returns the packages (with their
    dependencies) apt would install, as would_change and, with --diff, a diff of the package
    list, and changed when there is one. When apt cannot resolve them from those lists (a
    real run refreshes them first) it says so in check_mode_unknown instead of failing.
  - Check mode (a preview): mode=check reads every source, the host's own too, into a
    scratch apt state (the host's package lists are not refreshed); mode=install installs
    nothing and writes nothing: it reports the packages it would install at that version, and
    whether (with --diff, how) the source, key and pins would change.
options:
  mode: {type: str, choices: [check, install, simulate], required: true}
  packages: {type: list, elements: str, default: [], description: "mode=simulate: the packages to install"}
  kind: {type: str, choices: [distribution, repository], default: distribution}
  url: {type: str, description: "the repository's URI (http, https or file)"}
  suite: {type: str}
  components: {type: str, default: main}
  key: {type: str, description: the ASCII-armored signing key of the repository}
  pin: {type: str, description: "an apt Pin value for the repository's packages (e.g. 'release o=Ceph'), priority 100"}
  target: {type: str, description: "the upstream version wanted (e.g. 18.2.7); empty: the highest offered"}
  version: {type: str, description: "mode=install: the exact Debian version to install"}
  timeout: {type: int, default: 900}
"""

import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import UNKNOWN, CommandError, check_mode, check_result, checking, run, tail, would, write_file
from ansible.module_utils.carapace_ceph_cluster import upstream, version_key

SOURCES = "/etc/apt/sources.list.d/carapace-ceph.sources"
KEY = "/etc/apt/keyrings/carapace-ceph.asc"
PIN = "/etc/apt/preferences.d/carapace-ceph"
VERSION_PIN = "/etc/apt/preferences.d/carapace-ceph-version"
POLICY = "/usr/sbin/policy-rc.d"
SAVED_POLICY = "/usr/sbin/policy-rc.d.carapace-saved"
# Denies invoke-rc.d / deb-systemd-invoke actions on Ceph's units, defers to a policy the host
# had for the others, allows them otherwise.
POLICY_SCRIPT = """#!/bin/sh
# Carapace: Ceph's package upgrade in progress; removed when it ends.
case "$1" in
  ceph*) exit 101 ;;
esac
if [ -x %s ]; then exec %s "$@"; fi
exit 0
""" % (SAVED_POLICY, SAVED_POLICY)
# The package the offered version is read from: every OSD, monitor and manager host has it.
PROBE = "ceph-common"
ENV = {"DEBIAN_FRONTEND": "noninteractive", "NEEDRESTART_SUSPEND": "1", "LC_ALL": "C"}


def sources_text(p, key_path):
    return "# Carapace: the Ceph package source of the latest upgrade\nTypes: deb\nURIs: %s\nSuites: %s\nComponents: %s\nSigned-By: %s\n" % (
        p["url"], p["suite"], p["components"], key_path)


def apt_options(state):
    """apt options of a scratch state under directory state: the repository alone."""
    return [
        "-o", "Dir::Etc::SourceList=%s/carapace-ceph.sources" % state,
        "-o", "Dir::Etc::SourceParts=%s/parts" % state,
        "-o", "Dir::State::Lists=%s/lists" % state,
        "-o", "Dir::Cache=%s/cache" % state,
        "-o", "Dir::Etc::Preferences=%s/preferences" % state,
        "-o", "Dir::Etc::PreferencesParts=%s/parts" % state,
    ]


def installed_ceph_packages():
    """{package: version} of the installed packages built from Ceph's source."""
    rc, out, err = run(["dpkg-query", "-W", "-f", "${Package}\t${source:Package}\t${Version}\t${db:Status-Abbrev}\n"], timeout=60)
    found = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) == 4 and parts[1] == "ceph" and parts[3].startswith("ii"):
            found[parts[0]] = parts[2]
    return found


def madison(options, package, timeout):
    """The versions of package apt knows from the sources of options, highest first."""
    rc, out, err = run(["apt-cache"] + options + ["madison", package], timeout=timeout)
    versions = []
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) >= 3 and cells[0] == package and cells[1] not in versions:
            versions.append(cells[1])
    return versions


def scratch_apt_state(extra=()):
    """A new scratch directory for apt's state: `extra`, lists/partial and cache/archives/partial
    in it; the caller removes it."""
    state = tempfile.mkdtemp(prefix="carapace-apt-")
    try:
        # apt downloads as its sandbox user _apt, which must reach the lists.
        os.chmod(state, 0o755)
        for d in tuple(extra) + ("lists/partial", "cache/archives/partial"):
            os.makedirs(os.path.join(state, d), 0o755)
        try:
            sandbox = pwd.getpwnam("_apt")
            for d in ("lists/partial", "cache/archives/partial"):
                os.chown(os.path.join(state, d), sandbox.pw_uid, -1)
        except KeyError:
            pass
    except BaseException:
        shutil.rmtree(state, ignore_errors=True)
        raise
    return state


def check(module, p):
    timeout = p["timeout"]
    installed = installed_ceph_packages()
    if p["kind"] == "repository":
        state = scratch_apt_state(("parts",))
        try:
            with open(os.path.join(state, "key.asc"), "w") as handle:
                handle.write(p["key"] or "")
            with open(os.path.join(state, "carapace-ceph.sources"), "w") as handle:
                handle.write(sources_text(p, os.path.join(state, "key.asc")))
            options = apt_options(state)
            rc, out, err = run(["apt-get"] + options + ["-q", "update"], timeout=timeout)
            # apt-get update exits 0 also when an index failed: the warnings say so.
            problems = [line for line in err.splitlines() if re.match(r"^(W|E): ", line) and "unsandboxed" not in line]
            if rc != 0 or problems:
                module.fail_json(msg="the package source %s %s cannot be read: %s" % (p["url"], p["suite"], tail("\n".join(problems) or err, 8)), rc=rc)
            offered = madison(options, PROBE, timeout)
        finally:
            shutil.rmtree(state, ignore_errors=True)
    elif checking():
        # the host's own sources, read into scratch lists: its package lists stay as they are
        state = scratch_apt_state()
        try:
            options = ["-o", "Dir::State::Lists=%s/lists" % state, "-o", "Dir::Cache=%s/cache" % state]
            rc, out, err = run(["apt-get"] + options + ["-q", "update"], timeout=timeout, check=False)
            if rc != 0:
                module.fail_json(msg="apt-get update failed: %s" % tail(err, 8), rc=rc)
            offered = madison(options, PROBE, timeout)
        finally:
            shutil.rmtree(state, ignore_errors=True)
    else:
        rc, out, err = run(["apt-get", "-q", "update"], timeout=timeout, check=False)
        if rc != 0:
            module.fail_json(msg="apt-get update failed: %s" % tail(err, 8), rc=rc)
        offered = madison([], PROBE, timeout)
    offered.sort(key=lambda v: (version_key(v), v), reverse=True)
    wanted = [v for v in offered if not p["target"] or upstream(v) == p["target"]]
    module.exit_json(
        changed=False,
        offered=offered,
        candidate=wanted[0] if wanted else "",
        candidate_upstream=upstream(wanted[0]) if wanted else "",
        installed=installed,
        installed_upstream=upstream(installed.get(PROBE, "")),
    )


def install(module, p):
    timeout = p["timeout"]
    version = p["version"]
    if not version:
        module.fail_json(msg="mode=install needs the exact version")
    installed = installed_ceph_packages()
    if installed and all(v == version for v in installed.values()):
        # Reported as a step of its own, so that a host already done reads so in the steps.
        now = time.time()
        module.exit_json(changed=False, before=installed, after=installed,
                         carapace_steps=[{"name": "Ceph %s already installed on this host" % version, "result": "ok", "time_started": now, "time_finished": now}])
    if checking():
        if p["kind"] == "repository":
            write_file(KEY, (p["key"] or "").rstrip("\n") + "\n", 0o644)
            write_file(SOURCES, sources_text(p, KEY), 0o644)
            if p["pin"]:
                write_file(PIN, "# Carapace: the Ceph package source only where asked for\nPackage: *\nPin: %s\nPin-Priority: 100\n" % p["pin"], 0o644)
            elif os.path.exists(PIN):
                would("remove %s" % PIN)
        for package in sorted(installed):
            would("install %s=%s (now %s), no Ceph daemon started or restarted" % (package, version, installed[package]))
        would("pin the Ceph packages at %s (%s)" % (version, VERSION_PIN))
        module.exit_json(**check_result(changed=True, before=installed, after=dict((k, version) for k in installed)))
    changed = False
    options = []
    if p["kind"] == "repository":
        os.makedirs(os.path.dirname(KEY), 0o755, exist_ok=True)
        changed |= write_file(KEY, (p["key"] or "").rstrip("\n") + "\n", 0o644)
        changed |= write_file(SOURCES, sources_text(p, KEY), 0o644)
        if p["pin"]:
            changed |= write_file(PIN, "# Carapace: the Ceph package source only where asked for\nPackage: *\nPin: %s\nPin-Priority: 100\n" % p["pin"], 0o644)
        elif os.path.exists(PIN):
            os.unlink(PIN)
        # Only this source's lists are refreshed: the others may be out of reach and are not needed.
        update = ["apt-get", "-q", "-o", "Dir::Etc::SourceList=" + SOURCES, "-o", "Dir::Etc::SourceParts=-", "-o", "APT::Get::List-Cleanup=0", "update"]
        options = ["-t", p["suite"]]
    else:
        update = ["apt-get", "-q", "update"]
    if os.path.exists(VERSION_PIN):
        os.unlink(VERSION_PIN)
    rc, out, err = run(update, timeout=timeout)
    if rc != 0 or re.search(r"^E: ", err, re.M):
        module.fail_json(msg="refreshing the package lists failed: %s" % tail(err, 8), rc=rc)
    own_policy = not os.path.exists(SAVED_POLICY)
    if own_policy and os.path.exists(POLICY):
        os.rename(POLICY, SAVED_POLICY)
    try:
        write_file(POLICY, POLICY_SCRIPT, 0o755)
        argv = ["apt-get", "install", "-y", "-q", "--no-install-recommends",
                "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold"] + options
        argv += ["%s=%s" % (package, version) for package in sorted(installed)]
        env = dict(os.environ)
        env.update(ENV)
        rc, out, err = run_env(argv, env, timeout)
        if rc != 0:
            module.fail_json(msg="installing Ceph %s failed: %s" % (version, tail(err or out, 15)), rc=rc)
    finally:
        if own_policy:
            os.unlink(POLICY)
            if os.path.exists(SAVED_POLICY):
                os.rename(SAVED_POLICY, POLICY)
    after = installed_ceph_packages()
    write_file(VERSION_PIN, "# Carapace: Ceph stays at the version of the latest upgrade\nPackage: %s\nPin: version %s\nPin-Priority: 1001\n" % (
        " ".join(sorted(after)), version), 0o644)
    wrong = dict((k, v) for k, v in after.items() if v != version)
    if wrong:
        module.fail_json(msg="after the install some Ceph packages are not at %s: %s" % (version, wrong))
    module.exit_json(changed=True, before=installed, after=after)


def simulate(module, p):
    """mode=simulate: what apt-get would install, from the package lists as they are."""
    if not p["packages"] or any(not re.match(r"^[a-z0-9][a-z0-9+.-]*$", name) for name in p["packages"]):
        module.fail_json(msg="mode=simulate needs package names, got %s" % p["packages"])
    env = dict(os.environ)
    env.update(ENV)
    rc, out, err = run_env(["apt-get", "-s", "-q", "install", "--no-install-recommends"] + list(p["packages"]), env, p["timeout"])
    if rc != 0:
        module.exit_json(changed=False, packages=[], **{UNKNOWN: "apt-get cannot plan the install of %s from this host's package lists as they are "
                                                       "(a real run refreshes them first): %s" % (", ".join(p["packages"]), tail(err or out, 4))})
    found = []
    for line in out.splitlines():
        match = re.match(r"^Inst (\S+) (?:\[[^]]*\] )?\((\S+)", line)
        if match:
            found.append({"name": match.group(1), "version": match.group(2)})
    result = {"changed": bool(found), "packages": found, "would_change": ["install %s %s" % (f["name"], f["version"]) for f in found]}
    if module._diff and found:
        result["diff"] = {"before": "", "after": "".join("%s %s\n" % (f["name"], f["version"]) for f in found),
                          "before_header": "installed packages", "after_header": "packages apt-get would install"}
    module.exit_json(**result)


def run_env(argv, env, timeout):
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, env=env, check=False)
        return done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %s s" % timeout


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", choices=["check", "install", "simulate"], required=True),
            packages=dict(type="list", elements="str", default=[]),
            kind=dict(type="str", choices=["distribution", "repository"], default="distribution"),
            url=dict(type="str", default=""),
            suite=dict(type="str", default=""),
            components=dict(type="str", default="main"),
            key=dict(type="str", default="", no_log=False),
            pin=dict(type="str", default=""),
            target=dict(type="str", default=""),
            version=dict(type="str", default=""),
            timeout=dict(type="int", default=900),
        ),
        supports_check_mode=True,
    )
    p = module.params
    check_mode(module)
    if p["kind"] == "repository":
        problems = []
        if not re.match(r"^(https?://[^\s\"]+|file:/[^\s\"]*)$", p["url"] or ""):
            problems.append("url must be an http, https or file URI")
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$", p["suite"] or ""):
            problems.append("suite: letters, digits, '.', '_', '-', '/'")
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._ -]*$", p["components"] or ""):
            problems.append("components: letters, digits, '.', '_', '-', spaces")
        if "-----BEGIN PGP PUBLIC KEY BLOCK-----" not in (p["key"] or ""):
            problems.append("key must be the ASCII-armored signing key")
        if p["pin"] and not re.match(r"^(release|origin|version) [ -~]+$", p["pin"]):
            problems.append("pin must be an apt Pin value ('release ...', 'origin ...' or 'version ...') on one line")
        if problems:
            module.fail_json(msg="the package source is refused: " + "; ".join(problems))
    if p["target"] and not re.match(r"^\d+\.\d+\.\d+$", p["target"]):
        module.fail_json(msg="target must be an upstream version such as 18.2.7, got %r" % p["target"])
    try:
        if p["mode"] == "simulate":
            simulate(module, p)
        if p["mode"] == "check":
            check(module, p)
        else:
            install(module, p)
    except CommandError as err:
        module.fail_json(msg=str(err), rc=err.rc)


if __name__ == "__main__":
    main()
