import {
  ErrorSchema,
  IdParamsSchema,
  ListQuerySchema,
  ListSchema,
  VersionParamsSchema,
  type ApiPermission,
  type ListQuery,
  type ModelName,
} from '@carapace/models';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import { parseBoolean } from '@carapace/config';
import type { Config } from '../../config.js';
import type { ListCursor, ListItem, ListRequest, Page, Stored } from '../../domain/list-types.js';
import { badRequest } from '../../errors.js';
import type { Principal } from '../../accounts/principal.js';
import { principalOf } from '../context.js';
import { listJson, listStream } from '../list-json.js';

/** What the generic routes need of a model's service. */
export interface VersionedRoutesService<D> {
  /** `query` is the request's whole query, for a model whose list takes more (`listQuery`). */
  list(request: ListRequest, query?: Readonly<Record<string, unknown>>): Promise<Page<Stored<D>>>;
  /** Every match of the list, for `all`: the answer streams (`listStream`). */
  listCursor(request: ListRequest, query?: Readonly<Record<string, unknown>>): Promise<ListCursor<ListItem<D>>>;
  get(id: string): Promise<Stored<D>>;
  versions(id: string, request: ListRequest): Promise<Page<Stored<D>>>;
  /** Every matching version, for `all`: the answer streams (`listStream`). */
  versionsCursor(id: string, request: ListRequest): Promise<ListCursor<ListItem<D>>>;
  version(id: string, version: number): Promise<Stored<D>>;
  create?(body: never, principal: Principal): Promise<Stored<D>>;
  update?(id: string, body: never, principal: Principal): Promise<Stored<D>>;
  delete?(id: string, principal: Principal): Promise<Stored<D>>;
}

/** One versioned model's routes: which path, schemas and permissions. */
export interface VersionedRoutesOptions<D> {
  readonly model: ModelName;
  readonly schema: TSchema;
  readonly service: VersionedRoutesService<D>;
  readonly createBody?: TSchema;
  readonly updateBody?: TSchema;
  /**
   * When set, the list is written from the rows as stored (`listJson`): the service hands
   * out rows whose data JSON it has proven exactly what the API serves, or parsed models.
   */
  readonly listItems?: (request: ListRequest) => Promise<Page<ListItem<D>>>;
  /** The query schema of the list, when it takes more than api-v1 §4's (`ListQuerySchema`). */
  readonly listQuery?: TSchema;
  readonly permissions: {
    readonly view: ApiPermission;
    readonly versions: ApiPermission;
    readonly create?: ApiPermission;
    readonly edit?: ApiPermission;
    readonly delete?: ApiPermission;
  };
}

/** Turns the list query (api-v1 §4) into a list request, clamping `per_page` to the configured maximum. */
export function listRequest(query: ListQuery, config: Config): ListRequest {
  const all = query.all === undefined ? false : parseBoolean(query.all);
  if (all === undefined) throw badRequest('Query parameter "all" takes a boolean: 1, yes, true, on / 0, no, false, off.');
  return {
    page: query.page ?? 1,
    perPage: Math.min(query.per_page ?? config.list.defaultPerPage, config.list.maxPerPage),
    all,
    filter: query.filter,
    sortBy: query.sort_by,
  };
}

/** The list envelope of a page. */
export function pageBody<T, U>(request: ListRequest, page: Page<T>, map: (item: T) => U) {
  return {
    items: page.items.map(map),
    page: request.all ? 1 : request.page,
    per_page: request.all ? page.total : request.perPage,
    total: page.total,
  };
}

/**
 * Registers the routes of one versioned model (contract "Versioned models", api-v1 §5):
 * list, get, version list, version get, and create, update and delete where the service
 * has them, each with its schemas and permissions (api-v1 §7). A page is answered at once;
 * `all` streams, so that no answer holds every match in memory.
 */
export function registerVersionedRoutes<D>(app: FastifyInstance, config: Config, options: VersionedRoutesOptions<D>): void {
  const { model, service, listItems, permissions: perm } = options;
  const base = `/v1/${model}`;
  const tags = [model];
  const one = { 200: options.schema, '4xx': ErrorSchema };
  const many = { 200: ListSchema(options.schema), '4xx': ErrorSchema };
  const toModel = (stored: Stored<D>) => ({ ...stored, model });
  type IdRequest = FastifyRequest<{ Params: { id: string } }>;
  const stream = (reply: FastifyReply, cursor: ListCursor<ListItem<D>>) =>
    reply
      .type('application/json')
      .send(listStream(cursor, model, (stored) => reply.serializeInput(toModel(stored), options.schema as Record<string, unknown>)));

  app.get(
    base,
    {
      config: { auth: 'token', permissions: [perm.view] },
      schema: { tags, summary: `List ${model} models`, querystring: options.listQuery ?? ListQuerySchema, response: many },
    },
    async (request: FastifyRequest<{ Querystring: ListQuery }>, reply: FastifyReply) => {
      const list = listRequest(request.query, config);
      if (list.all) return stream(reply, await service.listCursor(list, request.query));
      if (!listItems) return pageBody(list, await service.list(list, request.query), toModel);
      const items = await listItems(list);
      void reply.type('application/json');
      return listJson(list, items, model, (stored) => reply.serializeInput(toModel(stored), options.schema as Record<string, unknown>));
    },
  );
  app.get(
    `${base}/:id`,
    { config: { auth: 'token', permissions: [perm.view] }, schema: { tags, summary: `Get a ${model}`, params: IdParamsSchema, response: one } },
    async (request: IdRequest) => toModel(await service.get(request.params.id)),
  );
  app.get(
    `${base}/:id/version`,
    {
      config: { auth: 'token', permissions: [perm.view, perm.versions] },
      schema: { tags, summary: `List the versions of a ${model}`, params: IdParamsSchema, querystring: ListQuerySchema, response: many },
    },
    async (request: FastifyRequest<{ Params: { id: string }; Querystring: ListQuery }>, reply: FastifyReply) => {
      const list = listRequest(request.query, config);
      if (list.all) return stream(reply, await service.versionsCursor(request.params.id, list));
      return pageBody(list, await service.versions(request.params.id, list), toModel);
    },
  );
  app.get(
    `${base}/:id/version/:version`,
    {
      config: { auth: 'token', permissions: [perm.view, perm.versions] },
      schema: { tags, summary: `Get one version of a ${model}`, params: VersionParamsSchema, response: one },
    },
    async (request: FastifyRequest<{ Params: { id: string; version: number } }>) =>
      toModel(await service.version(request.params.id, request.params.version)),
  );
  if (service.create && options.createBody && perm.create) {
    const create = service.create.bind(service);
    app.post(
      base,
      {
        config: { auth: 'token', permissions: [perm.view, perm.create] },
        schema: { tags, summary: `Create a ${model}`, body: options.createBody, response: one },
      },
      async (request) => toModel(await create(request.body as never, principalOf(request))),
    );
  }
  if (service.update && options.updateBody && perm.edit) {
    const update = service.update.bind(service);
    app.put(
      `${base}/:id`,
      {
        config: { auth: 'token', permissions: [perm.view, perm.edit] },
        schema: { tags, summary: `Update a ${model}: a new version`, params: IdParamsSchema, body: options.updateBody, response: one },
      },
      async (request: IdRequest) => toModel(await update(request.params.id, request.body as never, principalOf(request))),
    );
  }
  if (service.delete && perm.delete) {
    const remove = service.delete.bind(service);
    app.delete(
      `${base}/:id`,
      {
        config: { auth: 'token', permissions: [perm.view, perm.delete] },
        schema: { tags, summary: `Delete a ${model}`, params: IdParamsSchema, response: one },
      },
      async (request: IdRequest) => toModel(await remove(request.params.id, principalOf(request))),
    );
  }
}
