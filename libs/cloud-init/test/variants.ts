import type { CloudConfigOptions } from '@carapace/cloud-init';
import { GOLDEN_CA, PUBLIC_KEY } from './helpers.js';

/** A named set of generator options whose output is kept as a golden file. */
export interface Variant {
  name: string;
  options: CloudConfigOptions;
}

/**
 * The golden variants: their outputs are committed as `test/fixtures/<name>.yaml` and each
 * is validated by `cloud-init schema`.
 */
export const VARIANTS: readonly Variant[] = [
  {
    name: 'default',
    options: { url: 'http://10.77.0.1:8080/', serverDiscoveryToken: 'discovery-token-0123', publicKey: PUBLIC_KEY },
  },
  {
    // Values that YAML would misread if they were not quoted: a user named "on" (a
    // boolean in YAML 1.1), a token full of YAML punctuation.
    name: 'tls-ca-bundle',
    options: {
      url: 'https://Carapace.Example.COM:8443',
      serverDiscoveryToken: `tok: #"it's" [1, {2}] & *x | > yes`,
      publicKey: `  ${PUBLIC_KEY}\n`,
      username: 'on',
      timeout: 5,
      caBundle: GOLDEN_CA,
      retryDeadline: 600,
    },
  },
  {
    name: 'no-discovery',
    options: {
      url: 'https://[fd00::1]/',
      serverDiscoveryToken: 'unused',
      publicKey: PUBLIC_KEY,
      username: 'ceph-deploy',
      noDiscovery: true,
    },
  },
];
