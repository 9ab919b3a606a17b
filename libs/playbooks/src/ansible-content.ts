/**
 * Where the Ansible content of each playbook plugin lives on disk.
 *
 * @packageDocumentation
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getPlugin } from './registry.js';

// `src/` and `dist/` are both one level below the package root, so the same relative URL
// finds `ansible/` from the sources (tests, tsx) and from the build (an installed runner).
const ANSIBLE_ROOT = fileURLToPath(new URL('../ansible/', import.meta.url));

/**
 * Roles shared by several playbooks (`libs/playbooks/ansible/roles/`): the runner puts this
 * directory on Ansible's role path (`roles_path` of its ansible.cfg). A playbook's own
 * `roles/` beside its `playbook.yml` is searched first.
 */
export const SHARED_ROLES_DIR = join(ANSIBLE_ROOT, 'roles');

/** Where Ansible finds the content the playbooks share (set in the runner's ansible.cfg). */
export interface SharedAnsibleContent {
  /** `roles_path`: the shared roles (`SHARED_ROLES_DIR`). */
  readonly roles: string;
  /** `library`: the modules written for the playbooks (`library/carapace_*.py`). */
  readonly library: string;
  /** `module_utils`: what those modules share (`module_utils/carapace_*.py`). */
  readonly moduleUtils: string;
}

/** The shared content of `libs/playbooks/ansible/`: roles, modules and module utils. */
export const SHARED_ANSIBLE_CONTENT: SharedAnsibleContent = Object.freeze({
  roles: SHARED_ROLES_DIR,
  library: join(ANSIBLE_ROOT, 'library'),
  moduleUtils: join(ANSIBLE_ROOT, 'module_utils'),
});

/** The entry point inside a playbook's content directory. */
export const PLAYBOOK_ENTRY_POINT = 'playbook.yml';

/**
 * The clean-up entry point beside it, for the playbooks that have one: the runner runs it,
 * with the same inventory and variables, after a run of the playbook failed or was canceled
 * (e.g. to unset the flags a rolling restart set).
 */
export const CLEANUP_ENTRY_POINT = 'cleanup.yml';

/**
 * The absolute path of a playbook's Ansible content directory,
 * `libs/playbooks/ansible/<playbookId>/`, which holds `playbook.yml` and its `roles/`.
 *
 * @param playbookId - a playbook id of `GET /v1/playbook/` (`hello_world`, ...).
 * @returns the directory, without a trailing slash; `playbook.yml` exists in it.
 * @throws Error when the id is not a known playbook, or when the playbook has no Ansible
 *   content (no `playbook.yml` in its directory, e.g. a package built without `ansible/`).
 */
export function ansibleContentDir(playbookId: string): string {
  if (getPlugin(playbookId) === undefined) {
    throw new Error(`unknown playbook id ${JSON.stringify(playbookId)}: no Ansible content for it`);
  }
  const dir = join(ANSIBLE_ROOT, playbookId);
  const entry = join(dir, PLAYBOOK_ENTRY_POINT);
  let isFile = false;
  try {
    isFile = statSync(entry).isFile();
  } catch {
    isFile = false;
  }
  if (!isFile) {
    throw new Error(`playbook ${playbookId} has no Ansible content: ${entry} is missing`);
  }
  return dir;
}
