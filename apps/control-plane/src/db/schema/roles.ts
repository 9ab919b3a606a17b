import { versionedTable } from './versioned.js';

/** Roles, every version. The name is unique among live roles (see `0001_expression_indexes.sql`). */
export const roles = versionedTable('roles');
