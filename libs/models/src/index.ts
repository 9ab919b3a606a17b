export * from './permissions.js';
export * from './common.schema.js';
export * from './user.schema.js';
export * from './role.schema.js';
export * from './auth.schema.js';
export * from './playbook.schema.js';
export * from './server.schema.js';
export * from './cluster.schema.js';
