#!/usr/bin/python3
# Carapace: a file with a given content in one round trip (the copy and template modules take
# three: a stat, a transfer and the copy itself).
"""Write a file's content, mode and owner, atomically, when they differ."""

DOCUMENTATION = r"""
module: carapace_file
short_description: Writes a file whose whole content is given
description:
  - Writes content to dest atomically (a temporary file beside it, renamed) when the file
    does not already hold it; sets mode, owner and group. The parent directory is made
    (root, 0755) when missing. Reports changed only when something changed.
  - Check mode changes nothing and reports whether it would, what (would_change) and, with
    --diff, the content before and after. An owner that does not exist yet is a change.
options:
  dest: {type: path, required: true}
  content: {type: str, required: true}
  mode: {type: str, default: "0644", description: octal, as a string}
  owner: {type: str, default: root}
  group: {type: str, default: root}
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.carapace_ceph import check_mode, check_result, would, write_file


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type="path", required=True),
            content=dict(type="str", required=True),
            mode=dict(type="str", default="0644"),
            owner=dict(type="str", default="root"),
            group=dict(type="str", default="root"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        mode = int(p["mode"], 8)
    except ValueError:
        module.fail_json(msg="mode must be octal, got %s" % p["mode"])
    checking = check_mode(module)
    changed = False
    parent = os.path.dirname(p["dest"])
    if not os.path.isdir(parent):
        if checking:
            would("create directory %s" % parent)
        else:
            os.makedirs(parent, 0o755)
        changed = True
    try:
        changed |= write_file(p["dest"], p["content"], mode, p["owner"], p["group"])
    except (KeyError, OSError) as err:
        module.fail_json(msg="%s: %s" % (p["dest"], err))
    module.exit_json(**check_result(changed=changed, dest=p["dest"]))


if __name__ == "__main__":
    main()
