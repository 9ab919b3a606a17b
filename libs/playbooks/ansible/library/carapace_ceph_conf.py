#!/usr/bin/python3
# Carapace: options set or removed in a host's ceph.conf, the rest of the file kept.
"""Set and remove options in ceph.conf."""

DOCUMENTATION = r"""
module: carapace_ceph_conf
short_description: Sets and removes options in ceph.conf, keeping the rest of the file
description:
  - Each option of set is written as 'name = value' in its section (its line replaced where
    it is, else added at the end of the section; a missing section is added at the end);
    each option of remove is deleted from its section. Option names match as Ceph matches
    them (spaces, dashes and underscores alike). Comments and the order of the rest are
    kept. The file is replaced atomically, with its mode, only when it changes.
options:
  path: {type: path, default: /etc/ceph/ceph.conf}
  set: {type: list, elements: dict, default: [], description: "[{section, name, value}]"}
  remove: {type: list, elements: dict, default: [], description: "[{section, name}]"}
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import write_file
from ansible.module_utils.carapace_ceph_options import conf_value, edit_conf


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/etc/ceph/ceph.conf"),
            set=dict(type="list", elements="dict", default=[]),
            remove=dict(type="list", elements="dict", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    for option in p["set"] + p["remove"]:
        for field in ("section", "name") + (("value",) if option in p["set"] else ()):
            if not isinstance(option.get(field), str) or not option.get(field) or "\n" in option[field]:
                module.fail_json(msg="every option needs a one-line %s, got %r" % (field, option))
    try:
        with open(p["path"], encoding="utf-8") as handle:
            before = handle.read()
        st = os.stat(p["path"])
    except OSError as err:
        module.fail_json(msg="cannot read %s: %s" % (p["path"], err))
    after = edit_conf(before, p["set"], p["remove"])
    changes = ["%s %s = %s" % (o["section"], o["name"], o["value"]) for o in p["set"] if conf_value(before, o["section"], o["name"]) != o["value"]]
    changes += ["%s %s removed" % (o["section"], o["name"]) for o in p["remove"] if conf_value(before, o["section"], o["name"]) is not None]
    if after == before:
        module.exit_json(changed=False, changes=[])
    if not module.check_mode:
        import grp
        import pwd

        write_file(p["path"], after, st.st_mode & 0o7777, pwd.getpwuid(st.st_uid).pw_name, grp.getgrgid(st.st_gid).gr_name)
    module.exit_json(changed=True, changes=changes, diff={"before": before, "after": after, "before_header": p["path"], "after_header": p["path"]})


if __name__ == "__main__":
    main()
