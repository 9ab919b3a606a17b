import { versionedTable } from './versioned.js';

/** Executions, every version: each state change is a version. Indexed on state. */
export const executions = versionedTable('executions');
