export * from './descriptors.js';
