import { randomUUID } from 'node:crypto';
import type { UserData } from '@carapace/models';
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

/**
 * Registers `count` servers the way hosts do (`ServerService.register`, as with the discovery
 * token) and records for each the facts a runner would have gathered
 * (`ServerService.recordFacts`, about 10 KB of JSON each): two versions per server, all in
 * one transaction (the service's own transactions nest in it as savepoints). Returns their
 * ids and the mean size of the facts JSON in bytes.
 */
export async function seedServers(db: Database, servers: Container['services']['servers'], count: number): Promise<{ ids: string[]; factsBytes: number }> {
  const r = random(0x5e7e75);
  const now = Math.floor(Date.now() / 1000);
  const ids: string[] = [];
  let bytes = 0;
  await db.transaction(async () => {
    for (let i = 0; i < count; i++) {
      const id = randomUUID();
      await servers.register({ id, host: publicIp(i), username: 'ansible' }, null);
      const facts = serverFacts(i, r, now - Math.floor(r() * 86_400));
      if (i < 100) bytes += JSON.stringify(facts).length;
      await servers.recordFacts(id, facts, `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${Buffer.from(id).toString('base64').slice(0, 40)}`);
      ids.push(id);
    }
  });
  return { ids, factsBytes: Math.round(bytes / Math.min(count, 100)) };
}
