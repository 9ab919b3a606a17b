import { Type, type Static } from 'typebox';
import { ModelSchema, UpdateBodySchema } from './common.schema.js';

/** An address of a network interface. */
export const AddressSchema = Type.Object({
  family: Type.Union([Type.Literal('inet'), Type.Literal('inet6')]),
  address: Type.String(),
  prefix: Type.Integer(),
});

/** A network interface of a server. */
export const InterfaceSchema = Type.Object({
  name: Type.String(),
  mac: Type.Union([Type.String(), Type.Null()]),
  mtu: Type.Union([Type.Integer(), Type.Null()]),
  addresses: Type.Array(AddressSchema),
  /** Whether the default route leaves through this interface. */
  default_route: Type.Boolean(),
});
export type NetworkInterface = Static<typeof InterfaceSchema>;

/** A partition of a disk. */
export const PartitionSchema = Type.Object({
  name: Type.String(),
  path: Type.String(),
  size_bytes: Type.Integer(),
  fstype: Type.Union([Type.String(), Type.Null()]),
  mountpoint: Type.Union([Type.String(), Type.Null()]),
  holders: Type.Array(Type.String()),
});
export type Partition = Static<typeof PartitionSchema>;

/** A block device of a server. */
export const DiskSchema = Type.Object({
  name: Type.String(),
  path: Type.String(),
  size_bytes: Type.Integer(),
  rotational: Type.Boolean(),
  /** lsblk's type: `disk`, `loop`, `rom`, ... */
  type: Type.String(),
  /**
   * The kernel's name of the device, present only when the server's `/dev` names it
   * otherwise: a container given a loop device as `/dev/vdb` has `name` `vdb`, `type` `loop`
   * and `kernel_name` `loop3`. `name` and `path` are always the server's.
   */
  kernel_name: Type.Optional(Type.String()),
  model: Type.Union([Type.String(), Type.Null()]),
  serial: Type.Union([Type.String(), Type.Null()]),
  read_only: Type.Boolean(),
  removable: Type.Boolean(),
  fstype: Type.Union([Type.String(), Type.Null()]),
  mountpoint: Type.Union([Type.String(), Type.Null()]),
  holders: Type.Array(Type.String()),
  partitions: Type.Array(PartitionSchema),
});
export type Disk = Static<typeof DiskSchema>;

/** The facts a runner gathers from a server over SSH. */
export const ServerFactsSchema = Type.Object({
  hostname: Type.String(),
  fqdn: Type.String(),
  os: Type.Object({ id: Type.String(), version_id: Type.String(), pretty_name: Type.String(), kernel: Type.String() }),
  cpu: Type.Object({ count: Type.Integer(), model: Type.String() }),
  memory: Type.Object({ total_bytes: Type.Integer() }),
  interfaces: Type.Array(InterfaceSchema),
  /** The IPv4 address of the interface the default route leaves through, if any. */
  default_ipv4: Type.Union([Type.String(), Type.Null()]),
  disks: Type.Array(DiskSchema),
  /** Unix time the facts were gathered at. */
  gathered_at: Type.Integer(),
});
export type ServerFacts = Static<typeof ServerFactsSchema>;

/** The states of a server. */
export const SERVER_STATES = [
  'operational',
  'off',
  'maintenance_no_reconfig',
  'maintenance_reconfig',
  'gathering_facts',
  'unreachable',
] as const;
export type ServerState = (typeof SERVER_STATES)[number];

/** `data` of a server model. `facts` is `{}` until a runner has gathered them. */
export const ServerDataSchema = Type.Object({
  name: Type.String(),
  fqdn: Type.String(),
  ip: Type.String(),
  username: Type.String(),
  state: Type.String(),
  cluster_id: Type.Union([Type.String(), Type.Null()]),
  facts: Type.Union([ServerFactsSchema, Type.Object({})]),
  /** Why the last fact gathering failed, or null. */
  facts_error: Type.Union([Type.String(), Type.Null()]),
  /** The SSH host key recorded when facts were first gathered (`type base64`), or null. */
  ssh_host_key: Type.Union([Type.String(), Type.Null()]),
});
export type ServerData = Static<typeof ServerDataSchema>;

/** A server model. */
export const ServerSchema = ModelSchema('server', ServerDataSchema);
export type Server = Static<typeof ServerSchema>;

/** Body of `PUT /v1/server/{id}/`: only `name` and `state` change. */
export const ServerUpdateSchema = UpdateBodySchema(
  Type.Object({ name: Type.String({ minLength: 1, maxLength: 255 }), state: Type.Optional(Type.String({ maxLength: 64 })) }, { additionalProperties: true }),
);
export type ServerUpdate = Static<typeof ServerUpdateSchema>;
