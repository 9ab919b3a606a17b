/**
 * The shapes of the raw command outputs the facts are built from, loose enough for the
 * versions found on supported systems: lsblk before util-linux 2.33 prints numbers and
 * flags as strings, before 2.37 it has no `mountpoints`; old iproute2 prints empty objects.
 */
import { Type, type Static, type TSchema } from 'typebox';

const Nullable = <T extends TSchema>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]));

/** A number that old lsblk prints as a string. */
const LsblkNumber = Nullable(Type.Union([Type.Number(), Type.String()]));
/** A flag that lsblk prints as a boolean, or as `"0"`/`"1"` before util-linux 2.33. */
const LsblkFlag = Nullable(Type.Union([Type.Boolean(), Type.String(), Type.Number()]));

/** One device of `lsblk -J -b -O`; `children` are checked one by one while walking the tree. */
export const LsblkDeviceSchema = Type.Object({
  name: Type.String({ minLength: 1 }),
  kname: Nullable(Type.String()),
  'maj:min': Nullable(Type.String()),
  path: Nullable(Type.String()),
  type: Type.String({ minLength: 1 }),
  size: LsblkNumber,
  rota: LsblkFlag,
  ro: LsblkFlag,
  rm: LsblkFlag,
  model: Nullable(Type.String()),
  serial: Nullable(Type.String()),
  fstype: Nullable(Type.String()),
  mountpoint: Nullable(Type.String()),
  mountpoints: Type.Optional(Type.Array(Type.Union([Type.String(), Type.Null()]))),
  children: Type.Optional(Type.Array(Type.Unknown())),
});
export type LsblkDevice = Static<typeof LsblkDeviceSchema>;

/** The top level of `lsblk -J`. */
export const LsblkOutputSchema = Type.Object({ blockdevices: Type.Array(Type.Unknown()) });

/** An address of `ip -j addr show`. */
export const IpAddrInfoSchema = Type.Object({
  family: Type.Optional(Type.String()),
  local: Type.Optional(Type.String()),
  prefixlen: Type.Optional(Type.Integer({ minimum: 0 })),
  scope: Type.Optional(Type.String()),
});

/** One link of `ip -j addr show`; entries without `ifname` (old iproute2) are skipped. */
export const IpLinkSchema = Type.Object({
  ifname: Type.Optional(Type.String({ minLength: 1 })),
  mtu: Type.Optional(Type.Integer()),
  link_type: Type.Optional(Type.String()),
  address: Type.Optional(Type.String()),
  addr_info: Type.Optional(Type.Array(IpAddrInfoSchema)),
});
export const IpAddrOutputSchema = Type.Array(IpLinkSchema);
export type IpLink = Static<typeof IpLinkSchema>;

/** One route of `ip -j route show default`. */
export const IpRouteSchema = Type.Object({
  dst: Type.Optional(Type.String()),
  dev: Type.Optional(Type.String()),
  metric: Type.Optional(Type.Integer()),
  prefsrc: Type.Optional(Type.String()),
  nexthops: Type.Optional(Type.Array(Type.Object({ dev: Type.Optional(Type.String()) }))),
});
export const IpRouteOutputSchema = Type.Array(IpRouteSchema);
export type IpRoute = Static<typeof IpRouteSchema>;
