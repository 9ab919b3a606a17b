// Which playbooks a relaunch may run on their failed hosts only (`PlaybookPlugin.relaunchSubset`,
// issue 31): every plugin says, with its reason where it may not; the ones that configure a
// cluster-wide thing together (monitors, a deployment, a purge, the rolling runs) may not.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ansibleContentDir, PLAYBOOK_ENTRY_POINT, PLUGINS } from '../src/index.js';

/** A playbook's text with the playbooks it imports (`import_playbook`) in their place. */
function playbookText(path: string): string {
  return readFileSync(path, 'utf8').replace(/^- ansible\.builtin\.import_playbook: (\S+)$/gm, (_, rel: string) => playbookText(join(dirname(path), rel)));
}

describe('relaunchSubset', () => {
  it('is declared by every plugin, with a reason where a subset is not allowed', () => {
    for (const [id, plugin] of PLUGINS) {
      expect(typeof plugin.relaunchSubset, id).toBe('boolean');
      if (plugin.relaunchSubset) expect(plugin.relaunchSubsetReason, id).toBeUndefined();
      else expect(plugin.relaunchSubsetReason, id).toMatch(/^[a-z].{20,}[^.]$/);
    }
  });

  it('allows a subset exactly where hosts can be finished on their own', () => {
    const subset = [...PLUGINS].filter(([, p]) => p.relaunchSubset).map(([id]) => id).sort();
    expect(subset).toEqual(['add_osd', 'add_pool', 'hello_world', 'remove_pool']);
    const whole = [...PLUGINS].filter(([, p]) => !p.relaunchSubset).map(([id]) => id).sort();
    expect(whole).toEqual(['add_mon', 'cinder_integration', 'cluster_deploy', 'maintenance_enter', 'maintenance_exit', 'purge_cluster', 'remove_mon', 'remove_osd', 'replace_mon', 'replace_osd', 'restart_services', 'update_ceph_configuration', 'upgrade_ceph']);
  });

  it('allows a subset only where no play but the pre-flight stops every host at the first failure', () => {
    // A play with any_errors_fatal stops the hosts that did not fail too: they would be left
    // unfinished without an error of their own, and a relaunch of the failed hosts would miss them.
    for (const [id, plugin] of PLUGINS) {
      if (!plugin.relaunchSubset) continue;
      const text = playbookText(join(ansibleContentDir(id), PLAYBOOK_ENTRY_POINT));
      const plays = text.split(/^(?=- name: )/m).filter((p) => p.startsWith('- name: '));
      expect(plays.length, id).toBeGreaterThan(0);
      for (const play of plays) {
        const name = /^- name: (.*)$/m.exec(play)?.[1] ?? '';
        if (/^\s+any_errors_fatal:\s*true/m.test(play)) expect(name, `${id}: the play "${name}" stops every host at the first failure`).toBe('pre-flight');
      }
    }
  });

  it('names groups to run beside the failed hosts only where a subset is allowed, and only groups its playbook has', () => {
    for (const [id, plugin] of PLUGINS) {
      if (!plugin.relaunchWith) continue;
      expect(plugin.relaunchSubset, id).toBe(true);
      const text = readFileSync(join(ansibleContentDir(id), PLAYBOOK_ENTRY_POINT), 'utf8');
      for (const group of plugin.relaunchWith) expect(text, `${id}: hosts: ${group}`).toMatch(new RegExp(`^\\s+hosts: (.*:)?${group}(:.*)?$`, 'm'));
    }
  });
});
