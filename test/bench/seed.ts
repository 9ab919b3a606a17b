import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { sql, type SQL } from 'drizzle-orm';
import { isHost, type ServerData, type ServerFacts, type UserData } from '@carapace/models';
import type { Container, Database } from '@carapace/control-plane';
import { schema, VersionedRepository } from '@carapace/control-plane/testing';
import { random } from '@carapace/test-support/random';
import { pick, publicIp, serverFacts } from './facts.js';

const FIRST = [
  'Ada', 'Alan', 'Amara', 'Andrei', 'Aiko', 'Beatriz', 'Bjorn', 'Carmen', 'Chen', 'Dmitri', 'Elena', 'Emeka', 'Fatima',
  'François', 'Grace', 'Hiroshi', 'Ingrid', 'Ivan', 'Jamal', 'Jörg', 'Kavya', 'Kwame', 'Lena', 'Linus', 'Maria', 'Mateo',
  'Mei', 'Nadia', 'Noah', 'Olga', 'Omar', 'Priya', 'Quentin', 'Rosa', 'Sanjay', 'Sofia', 'Tariq', 'Ursula', 'Vikram',
  'Wanjiru', 'Xavier', 'Yusuf', 'Zoë', 'Zhang',
];
const LAST = [
  'Abara', 'Andersen', 'Bauer', 'Becker', 'Castillo', 'Chowdhury', 'Dubois', 'Eriksson', 'Fischer', 'García', 'Haddad',
  'Hoffmann', 'Ivanova', 'Jensen', 'Kim', 'Kowalski', 'Lefebvre', 'Lindqvist', 'Moreau', 'Müller', 'Nakamura', 'Novak',
  'Okafor', 'Olsen', 'Petrov', 'Popescu', 'Quispe', 'Rossi', 'Sato', 'Schmidt', 'Singh', 'Smirnov', 'Tanaka', 'Torres',
  'Van der Berg', 'Wagner', 'Wang', 'Weber', 'Yamamoto', 'Zapata',
];

function ascii(s: string): string {
  return s
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '');
}

/**
 * Stores `count` users (version 1, no role) straight through a `VersionedRepository` on the
 * `users` table, in one transaction, with varied names: a realistic table for the list and
 * get routes without paying for the API's password hashing and mails. Returns their ids.
 */
export async function seedUsers(db: Database, count: number, initiatorId: string | null): Promise<string[]> {
  const repo = new VersionedRepository<UserData>(db, schema.users, {
    data: ['login', 'email', 'full_name', 'role_id'],
    defaultSort: [['full_name', 1]],
  });
  const r = random(0xc0ffee);
  const now = Math.floor(Date.now() / 1000);
  const ids: string[] = [];
  await repo.transaction(async () => {
    for (let i = 0; i < count; i++) {
      const first = pick(FIRST, r);
      const last = pick(LAST, r);
      const login = `${ascii(first)}.${ascii(last)}${i}`;
      const data: UserData = {
        login,
        email: `${login}@${pick(['example.org', 'example.com', 'ceph.example.net', 'storage.example.io'], r)}`,
        full_name: `${first} ${last}`,
        role_id: null,
      };
      ids.push((await repo.create(data, initiatorId, now - Math.floor(r() * 86_400 * 365))).id);
    }
  });
  return ids;
}

/** How many servers go through the service (`ServerService.register`, `recordFacts`); the rest are bulk inserted. */
const SERVICE_SEEDED = 1000;
/** Servers per multi-row INSERT of the bulk seeding (two versions each, seven values a row). */
const BULK_BATCH = 100;

/**
 * The two rows a server gets from registering (`ServerService.register`) and then having
 * its facts recorded (`ServerService.recordFacts`), as those store them: the same data, in
 * the same key order, so that the stored JSON is the same text. `seedServers` checks it
 * against the service on its first server.
 */
function serverVersions(id: string, index: number, facts: ServerFacts, sshHostKey: string): [ServerData, ServerData] {
  const host = publicIp(index);
  const registered: ServerData = {
    name: host,
    fqdn: host,
    ip: host,
    username: 'ansible',
    state: 'gathering_facts',
    cluster_id: null,
    facts: {},
    facts_error: null,
    ssh_host_key: null,
  };
  const gathered: ServerData = {
    ...registered,
    name: facts.hostname || host,
    fqdn: isHost(facts.fqdn) ? facts.fqdn : host,
    ip: facts.default_ipv4 !== null && isIP(facts.default_ipv4) === 4 ? facts.default_ipv4 : host,
    facts,
    facts_error: null,
    ssh_host_key: sshHostKey,
    state: 'operational',
  };
  return [registered, gathered];
}

function hostKey(id: string): string {
  return `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${Buffer.from(id).toString('base64').slice(0, 40)}`;
}

/**
 * Registers `count` servers the way hosts do (`ServerService.register`, as with the discovery
 * token) and records for each the facts a runner would have gathered
 * (`ServerService.recordFacts`, about 10 KB of JSON each): two versions per server. The
 * first `SERVICE_SEEDED` (1,000) go through the service, all in one transaction (the
 * service's own transactions nest in it as savepoints); beyond them (`BENCH_SERVERS=100000`)
 * the same two rows and the facts request are bulk inserted, `BULK_BATCH` servers a
 * statement, in one transaction, first: the service's servers come last, so that whatever
 * the service counts or caches follows every write. Returns the ids (the service's first)
 * and the mean size of the facts JSON in bytes.
 */
export async function seedServers(db: Database, servers: Container['services']['servers'], count: number): Promise<{ ids: string[]; factsBytes: number }> {
  const serviceCount = Math.min(count, SERVICE_SEEDED);
  const now = Math.floor(Date.now() / 1000);
  const nowMs = Date.now();
  const ids: string[] = [];
  let bytes = 0;
  const r = random(0x5e7e75);
  const bulk = random(0xb01c);
  await db.transaction(async () => {
    for (let start = serviceCount; start < count; start += BULK_BATCH) {
      const rows: SQL[] = [];
      const requests: SQL[] = [];
      for (let i = start; i < Math.min(count, start + BULK_BATCH); i++) {
        const id = randomUUID();
        const time = now - Math.floor(bulk() * 86_400);
        const [registered, gathered] = serverVersions(id, i, serverFacts(i, bulk, time), hostKey(id));
        rows.push(sql`(${id}, 1, ${now}, 0, NULL, 0, ${JSON.stringify(registered)})`, sql`(${id}, 2, ${now}, 0, NULL, 1, ${JSON.stringify(gathered)})`);
        requests.push(sql`(${id}, ${randomUUID()}, 0, ${nowMs}, NULL, NULL)`);
      }
      await db.run(sql`INSERT INTO servers (id, version, time_updated, time_deleted, initiator_id, is_latest, data) VALUES ${sql.join(rows, sql`, `)}`);
      await db.run(sql`INSERT INTO facts_requests (server_id, request_id, attempts, due_ms, runner, sent_ms) VALUES ${sql.join(requests, sql`, `)}`);
    }
  });
  await db.transaction(async () => {
    for (let i = 0; i < serviceCount; i++) {
      const id = randomUUID();
      await servers.register({ id, host: publicIp(i), username: 'ansible' }, null);
      const facts = serverFacts(i, r, now - Math.floor(r() * 86_400));
      if (i < 100) bytes += JSON.stringify(facts).length;
      const stored = await servers.recordFacts(id, facts, hostKey(id));
      if (i === 0 && JSON.stringify(stored.data) !== JSON.stringify(serverVersions(id, i, facts, hostKey(id))[1])) {
        throw new Error('the bulk seeding no longer stores what ServerService stores: update serverVersions (test/bench/seed.ts)');
      }
      ids.push(id);
    }
  });
  return { ids, factsBytes: Math.round(bytes / Math.min(count, 100)) };
}
