// Stands in for Node-only modules that a browser never uses: undici and node:fs, which
// `@carapace/client` imports lazily for TLS options, and node:crypto, which
// `@carapace/cloud-init` uses only to check a CA bundle.
export const readFile = undefined;
export const Agent = undefined;
export const X509Certificate = undefined;
export default {};
