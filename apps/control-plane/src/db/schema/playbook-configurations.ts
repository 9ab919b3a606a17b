import { versionedTable } from './versioned.js';

/** Playbook configurations, every version. */
export const playbookConfigurations = versionedTable('playbook_configurations');
