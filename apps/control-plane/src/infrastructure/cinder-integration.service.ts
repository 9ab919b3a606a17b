import { posix } from 'node:path';
import type { ClusterFileRepository } from '../db/cluster-file.repository.js';
import { badRequest, notFound } from '../errors.js';
import type { ClusterService } from './cluster.service.js';

/** Where the files go on an OpenStack host when the request names no root. */
const DEFAULT_ROOT = '/etc/ceph';

/** The files an OpenStack host needs to use a cluster (ceph.conf, keyrings), stored at its deploy. */
export class CinderIntegrationService {
  constructor(
    private readonly clusters: ClusterService,
    private readonly stored: ClusterFileRepository,
  ) {}

  /**
   * The files of a live cluster by their path under `root` (400 when it has a `..` segment
   * or a NUL). 404 when the cluster is unknown or deleted, or has no files yet (not
   * deployed).
   */
  async files(clusterId: string, root = DEFAULT_ROOT): Promise<Record<string, string>> {
    if (root.split('/').includes('..') || root.includes('\0')) throw badRequest('"root" must be an absolute path without "..".');
    const cluster = await this.clusters.get(clusterId);
    if (cluster.time_deleted !== 0) throw notFound(`The cluster ${cluster.id} is deleted.`);
    const files = await this.stored.list(cluster.id);
    if (files.length === 0) throw notFound(`The cluster ${cluster.id} has no integration files yet: deploy it first.`);
    return Object.fromEntries(files.map((f) => [posix.join(posix.normalize(root), f.name), f.content]));
  }
}
