import { versionedTable } from './versioned.js';

/**
 * Users, every version. Login and e-mail are unique among live users and full name is
 * sorted on: those are expression indexes on `data`, created by the custom migration
 * `0001_expression_indexes.sql` (drizzle-kit cannot emit expression indexes with commas).
 */
export const users = versionedTable('users');
