// Stands in for Node-only modules (undici, node:fs) that `@carapace/client` imports lazily
// for TLS options a browser never uses.
export const readFile = undefined;
export const Agent = undefined;
export default {};
