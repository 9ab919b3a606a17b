export * from './descriptors.js';
export * from './plugin.js';
