/**
 * The playbook plugins Carapace ships, by playbook id.
 *
 * @packageDocumentation
 */
import { addOsdPlugin } from './add-osd.plugin.js';
import { cinderIntegrationPlugin } from './cinder-integration.plugin.js';
import { clusterDeployPlugin } from './cluster-deploy.plugin.js';
import { helloWorldPlugin } from './hello-world.plugin.js';
import { maintenanceEnterPlugin, maintenanceExitPlugin } from './maintenance.plugin.js';
import { addMonPlugin, removeMonPlugin, replaceMonPlugin } from './monitors.plugin.js';
import type { PlaybookPlugin } from './plugin.js';
import { addPoolPlugin, removePoolPlugin } from './pool.plugin.js';
import { purgeClusterPlugin } from './purge-cluster.plugin.js';
import { removeOsdPlugin } from './remove-osd.plugin.js';
import { replaceOsdPlugin } from './replace-osd.plugin.js';
import { restartServicesPlugin } from './restart-services.plugin.js';
import { updateCephConfigurationPlugin } from './update-ceph-configuration.plugin.js';
import { upgradeCephPlugin } from './upgrade-ceph.plugin.js';

/** Every plugin by playbook id, in the order of `PLAYBOOK_DESCRIPTORS` (sorted by name). */
export const PLUGINS: ReadonlyMap<string, PlaybookPlugin> = new Map(
  [addMonPlugin, addOsdPlugin, addPoolPlugin, cinderIntegrationPlugin, clusterDeployPlugin, helloWorldPlugin, maintenanceEnterPlugin, maintenanceExitPlugin, purgeClusterPlugin, removeMonPlugin, removeOsdPlugin, removePoolPlugin, replaceMonPlugin, replaceOsdPlugin, restartServicesPlugin, updateCephConfigurationPlugin, upgradeCephPlugin]
    .sort((a, b) => a.descriptor.name.localeCompare(b.descriptor.name))
    .map((p) => [p.descriptor.id, p] as const),
);

/** The plugin of a playbook id, or undefined for an unknown id (`UnknownPlaybookError`). */
export function getPlugin(id: string): PlaybookPlugin | undefined {
  return PLUGINS.get(id);
}
