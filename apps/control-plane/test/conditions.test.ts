// The conditions a service combines (db/condition.ts), checked by the statements that store a
// model, on the real database (SQLite, and PostgreSQL in the postgres project).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterData } from '@carapace/models';
import { Harness } from '@carapace/test-support/harness';
import { Conditions } from '../src/db/condition.js';
import { clusters } from '../src/db/schema/index.js';
import { VersionedRepository } from '../src/db/versioned.repository.js';

describe('conditions: what a service combines, the statement checks', () => {
  let h: Harness;
  let repo: VersionedRepository<ClusterData>;
  let live: string;
  let deleted: string;
  beforeAll(async () => {
    h = await Harness.start();
    repo = new VersionedRepository<ClusterData>(h.db, clusters, { data: ['name', 'configuration'], defaultSort: [['name', 1]] });
    live = (await repo.create({ name: 'live', configuration: {} }, null, 1)).id;
    const gone = await repo.create({ name: 'gone', configuration: {} }, null, 1);
    await repo.append(gone, { time_deleted: 2 }, null, 2);
    deleted = gone.id;
  });
  afterAll(() => h.stop());

  /** Whether createIf stores a model under `condition` (and the model is there after). */
  async function stores(condition: Parameters<VersionedRepository<ClusterData>['createIf']>[0]): Promise<boolean> {
    const made = await repo.createIf(condition, { name: `c-${Math.random()}`, configuration: {} }, null, 3);
    if (made) expect((await repo.getLive(made.id))?.id).toBe(made.id);
    return made !== undefined;
  }

  it('all: every part holds; undefined parts are left out; none at all holds', async () => {
    expect(await stores(Conditions.all(repo.liveCondition(live)))).toBe(true);
    expect(await stores(Conditions.all(repo.liveCondition(live), repo.liveCondition(deleted)))).toBe(false);
    expect(await stores(Conditions.all(repo.liveCondition(live), undefined, repo.liveCondition(live)))).toBe(true);
    expect(await stores(Conditions.all())).toBe(true);
  });

  it('not: the condition does not hold, also inside all', async () => {
    expect(await stores(Conditions.not(repo.liveCondition(deleted)))).toBe(true);
    expect(await stores(Conditions.not(repo.liveCondition(live)))).toBe(false);
    expect(await stores(Conditions.all(repo.liveCondition(live), Conditions.not(repo.liveCondition(deleted))))).toBe(true);
    expect(await stores(Conditions.all(repo.liveCondition(live), Conditions.not(repo.liveCondition(live))))).toBe(false);
  });

  it('a field condition and one over several models: anyLiveAmong is false for no ids, so its negation holds', async () => {
    expect(await stores(Conditions.not(repo.anyLiveAmong([], 'name', 'live', 'clusters_pkey')))).toBe(true);
    const named = await repo.list({ page: 1, perPage: 10, all: false }, repo.fieldEquals('name', 'live'));
    expect(named.items.map((c) => c.id)).toEqual([live]);
  });
});
