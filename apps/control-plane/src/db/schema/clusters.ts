import { versionedTable } from './versioned.js';

/** Clusters, every version. The name is unique among live clusters (expression index). */
export const clusters = versionedTable('clusters');
