/**
 * `@carapace/cloud-init`: the cloud-init user-data with which new servers register
 * themselves with Carapace at first boot (and again at every boot).
 *
 * @packageDocumentation
 */
export { generateCloudConfig, generate_cloud_config } from './generate.js';
export type { CloudConfigOptions, CloudConfigSnakeOptions, DiscoveryConfig } from './generate.js';
export {
  DEFAULT_RETRY_DEADLINE,
  DEFAULT_TIMEOUT,
  DEFAULT_USERNAME,
  DISCOVERY_PATHS,
  DISCOVERY_UNIT_NAME,
  INSTALL_MISSING_SCRIPT,
  PACKAGES,
  SUDO_RULE,
} from './constants.js';
export { DISCOVERY_SCRIPT } from './discovery-script.generated.js';
