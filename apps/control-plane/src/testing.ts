// What tests and benchmarks need beyond the public entry: the repositories and tables under
// the services, to seed or read a database directly (a realistic table without paying for the
// API's hashing and mails, or files a deploy would have stored). Not for production code.
export { ClusterFileRepository } from './db/cluster-file.repository.js';
export { VersionedRepository } from './db/versioned.repository.js';
export * as schema from './db/schema/index.js';
export { parseCephReport, type CephOutputs } from './infrastructure/ceph-report.js';
