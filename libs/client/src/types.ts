import type { PermissionGroup, PlaybookDescriptor, Runner } from '@carapace/models';
import type { FetchFunction, QueryValue } from './transport.js';

/** Options of {@link Client}'s constructor. */
export interface ClientOptions {
  /** Base address of the API without `/v1`, e.g. `https://carapace.example.com:8443`. */
  url: string;
  /** Login of the user. */
  login: string;
  /**
   * Password of the user. Without it the client cannot log in: it uses `token` until the
   * server refuses it (the call then fails with the server's 401).
   */
  password?: string;
  /** A token from an earlier login (`Client.login`'s `id`), used before logging in. Default null. */
  token?: string | null;
  /** Time limit of each call in milliseconds; null (the default) sets none on the client side. */
  timeout?: number | null;
  /** Whether the server's TLS certificate is checked. Default true. */
  verify?: boolean;
  /** Path of a client certificate for TLS: a PEM file holding the certificate and its key. Default null. */
  certificateFile?: string | null;
  /** Path of a PEM file of CA certificates that verify the server (instead of the system's). Default null. */
  caFile?: string | null;
  /** The `fetch` to use; default `globalThis.fetch`. */
  fetch?: FetchFunction;
}

/** One page of a list (api-v1 §4). */
export interface Page<T> {
  /** The models of this page. */
  items: T[];
  /** The page number, from 1. */
  page: number;
  /** The page size used (with `all`: the total). */
  per_page: number;
  /** How many models match, on all pages. */
  total: number;
}

/**
 * Query of a list call (api-v1 §4). `filter` and `sortBy` name fields of `data` or of the
 * envelope; objects are sent as JSON.
 */
export interface ListParams {
  /** Page number, from 1. */
  page?: number;
  /** Page size. */
  perPage?: number;
  /** Every match on one page. */
  all?: boolean;
  /**
   * Field → value, or field → `{eq|ne|gt|gte|lt|lte|in|regexp: value}`. Naming `time_deleted`
   * replaces the default "not deleted" condition: `{time_deleted: {ne: 0}}` lists deleted models.
   */
  filter?: Record<string, unknown> | string;
  /** Field → 1 (ascending) or -1 (descending), in order of precedence. */
  sortBy?: Record<string, 1 | -1> | string;
}

/** Query of an iteration over a whole list: like {@link ListParams} without the page. */
export type IterParams = Omit<ListParams, 'page' | 'all'>;

/** A message of the password reset flow. */
export interface Message {
  /** `Password reset was requested.` or `Password has been reset.` */
  message: string;
}

/** The answer of `getPermissions`: every permission group of the system. */
export interface PermissionList {
  /** The `api` and `playbook` groups. */
  items: PermissionGroup[];
}

/** The answer of `getPlaybooks`. */
export interface PlaybookList {
  /** The playbooks, sorted by name. */
  items: PlaybookDescriptor[];
}

/** The answer of `getRunners` (Carapace extension): every runner, not paged. */
export interface RunnerList {
  /** The runners, sorted by name. */
  items: Runner[];
}

/** The Cinder/Glance/Nova integration files of a cluster: path → content. */
export type CinderIntegration = Record<string, string>;

/** A hint given to a playbook configuration: the id of a hint of the playbook and its value. */
export interface HintValue {
  /** The hint's id, e.g. `dmcrypt`. */
  id: string;
  /** Its value, of the type the playbook describes. */
  value: unknown;
}

/**
 * The permissions of a role: the API's list of groups, or an object of group name → names
 * (`{api: [...], playbook: [...]}`).
 */
export type RolePermissions = PermissionGroup[] | Partial<Record<'api' | 'playbook', string[]>>;

/** Turns {@link RolePermissions} into the API's list of groups. */
export function permissionGroups(permissions: RolePermissions): PermissionGroup[] {
  if (Array.isArray(permissions)) return permissions;
  return Object.entries(permissions).map(([name, names]) => ({ name, permissions: [...(names ?? [])].sort() }));
}

/** The query parameters of a list call. */
export function listQuery(params: ListParams = {}): Record<string, QueryValue> {
  const json = (value: Record<string, unknown> | string | undefined) => (typeof value === 'string' || value === undefined ? value : JSON.stringify(value));
  return {
    page: params.page,
    per_page: params.perPage,
    all: params.all === undefined ? undefined : params.all ? 'true' : 'false',
    filter: json(params.filter),
    sort_by: json(params.sortBy),
  };
}
