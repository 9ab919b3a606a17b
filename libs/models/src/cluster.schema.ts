import { Type, type Static } from 'typebox';
import { ModelSchema, UpdateBodySchema } from './common.schema.js';

/** A server's place in a cluster role (`mons`, `osds`, ...). */
export const ClusterMemberSchema = Type.Object({
  server_id: Type.String(),
  version: Type.Integer(),
  fqdn: Type.String(),
  ip: Type.String(),
  server_name: Type.String(),
});
export type ClusterMember = Static<typeof ClusterMemberSchema>;

/**
 * The Ceph configuration options Carapace set on a cluster (`update_ceph_configuration`):
 * section (`global`, `mon`, `osd`, `osd.3`, `client`, ...) → option name → value, as given.
 */
export const CephOptionsSchema = Type.Record(Type.String(), Type.Record(Type.String(), Type.String()));
export type CephOptions = Static<typeof CephOptionsSchema>;

/**
 * `data` of a cluster model. Only executions change `configuration` and `ceph_options`;
 * `ceph_options` is absent until an `update_ceph_configuration` run completed.
 */
export const ClusterDataSchema = Type.Object({
  name: Type.String(),
  configuration: Type.Record(Type.String(), Type.Array(ClusterMemberSchema)),
  ceph_options: Type.Optional(CephOptionsSchema),
});
export type ClusterData = Static<typeof ClusterDataSchema>;

/** A cluster model. */
export const ClusterSchema = ModelSchema('cluster', ClusterDataSchema);
export type Cluster = Static<typeof ClusterSchema>;

const ClusterName = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' });

/** Body of `POST /v1/cluster/`. */
export const ClusterCreateSchema = Type.Object({ name: ClusterName });
export type ClusterCreate = Static<typeof ClusterCreateSchema>;

/** Body of `PUT /v1/cluster/{id}/`: only `name` changes. */
export const ClusterUpdateSchema = UpdateBodySchema(Type.Object({ name: ClusterName }, { additionalProperties: true }));
export type ClusterUpdate = Static<typeof ClusterUpdateSchema>;
