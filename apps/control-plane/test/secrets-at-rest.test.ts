// Secrets at rest, on the test's engine (an SQLite file, or PostgreSQL): a copy of the
// database (the file, or a pg_dump) holds no secret in clear and nothing that signs a token;
// a key rotation re-encrypts everything, all or nothing, after which the old key opens
// nothing while tokens and the cinder integration files stay as they were.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, createContainer, createLogger, loadConfig, openDatabase, type Config, type Container, type Database } from '../src/index.js';
import { ClusterFileRepository } from '../src/db/cluster-file.repository.js';
import { ExecutionEventsRepository } from '../src/db/execution-events.repository.js';
import { MailOutboxRepository } from '../src/db/mail-outbox.repository.js';
import { EncryptionRepository } from '../src/db/encryption.repository.js';
import { rotateKey } from '../src/secrets/at-rest.js';
import { SecretBox, SecretsError } from '../src/secrets/secret-box.js';
import { testDialect } from '@carapace/test-support/database';
import { findPostgresBinDir, testPostgresDatabase, type TestDatabase } from '@carapace/test-support/postgres';

const PASSWORD = 'root-password-of-secrets-test';

interface Running {
  readonly container: Container;
  readonly app: Awaited<ReturnType<typeof buildApp>>;
  readonly db: Database;
  stop(): Promise<void>;
}

describe(`secrets at rest (${testDialect()})`, { timeout: 60_000 }, () => {
  let dir: string;
  let pg: TestDatabase | null = null;
  let location = '';
  let config: Config;
  const logger = createLogger('silent');
  const keyring = `[client.cinder]\n\tkey = ${randomBytes(16).toString('base64')}\n`;
  const artifactSecret = `artifact-${randomBytes(12).toString('hex')}`;
  const mailSecret = `new-password-${randomBytes(12).toString('hex')}`;
  let signingKey = '';
  let token = '';
  let clusterId = '';
  let cinderBefore = '';

  async function start(): Promise<Running> {
    const db = await openDatabase(location);
    const container = await createContainer(config, db, logger, { mailer: { send: async () => undefined, close: async () => undefined } }).catch(async (err: unknown) => {
      await db.close();
      throw err;
    });
    const app = await buildApp({ services: container.services, logger });
    return {
      container,
      app,
      db,
      async stop() {
        await app.close();
        await container.close();
      },
    };
  }

  /** The database as a thief would copy it: the SQLite file, or a plain pg_dump. */
  function copyOfDatabase(): Buffer {
    if (!pg) {
      const wal = `${location}-wal`;
      return Buffer.concat([readFileSync(location), existsSync(wal) ? readFileSync(wal) : Buffer.alloc(0)]);
    }
    const dump = spawnSync(join(findPostgresBinDir() ?? '', 'pg_dump'), ['--no-owner', location], { maxBuffer: 256 * 1024 * 1024 });
    expect(dump.status, dump.stderr.toString()).toBe(0);
    return dump.stdout;
  }

  /** Every text value of every table, as a thief would try them. */
  async function everyValue(db: Database): Promise<string[]> {
    const tables =
      // Each engine's catalog lists its tables: the test names the engine.
      db.dialect === 'sqlite'
        ? (await db.all<{ name: string }>(sql`SELECT name FROM sqlite_master WHERE type = 'table'`)).map((t) => t.name)
        : (await db.all<{ name: string }>(sql`SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()`)).map((t) => t.name);
    const values = new Set<string>();
    for (const table of tables) {
      for (const row of await db.all<Record<string, unknown>>(sql`SELECT * FROM ${sql.identifier(table)}`)) {
        for (const value of Object.values(row)) if (typeof value === 'string' && value.length > 0) values.add(value);
      }
    }
    return [...values];
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-secrets-'));
    if (testDialect() === 'postgres') {
      pg = await testPostgresDatabase();
      location = pg.url;
    } else {
      location = join(dir, 'carapace.db');
    }
    config = loadConfig({
      env: {
        CARAPACE_DATA_DIR: dir,
        CARAPACE_ADMIN_PASSWORD: PASSWORD,
        CARAPACE_RUNNER: 'none',
        CARAPACE_LOG_LEVEL: 'silent',
        CARAPACE_DISCOVERY_TOKEN: 'secrets-test-discovery-token-0123456789',
        CARAPACE_THROTTLE_LOGIN_DELAY_BASE_MS: '0',
      },
    });
    const r = await start();
    try {
      const login = await r.app.inject({ method: 'POST', url: '/v1/auth/', payload: { username: 'root', password: PASSWORD } });
      token = login.json<{ id: string }>().id;
      const cluster = await r.app.inject({ method: 'POST', url: '/v1/cluster/', headers: { authorization: token }, payload: { name: 'vault' } });
      clusterId = cluster.json<{ id: string }>().id;
      const box = r.container.secretBox;
      // What a cinder_integration run stores, a file a run handed back, a mail waiting with a password.
      const files = new ClusterFileRepository(r.db, box);
      await files.put(clusterId, 'ceph.conf', '[global]\nfsid = 0\n', 1);
      await files.put(clusterId, 'ceph.client.cinder.keyring', keyring, 1);
      await new ExecutionEventsRepository(r.db, box).addArtifact('00000000-0000-4000-8000-000000000001', 1, 'keyring', artifactSecret);
      await new MailOutboxRepository(r.db, box).add({ to: 'someone@example.com', subject: 'Your account', text: `Your password is ${mailSecret}` }, Date.now() + 3_600_000);
      const stored = await r.db.get<{ value: string }>(sql`SELECT value FROM secrets WHERE name = 'token_signing_key'`);
      signingKey = box.open(stored?.value ?? '', 'secrets:token_signing_key');
      cinderBefore = (await r.app.inject({ method: 'GET', url: `/v1/cinder_integration/${clusterId}/`, headers: { authorization: token } })).body;
      expect(cinderBefore).toContain('client.cinder');
    } finally {
      await r.stop();
    }
  });
  afterAll(async () => {
    await pg?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps no secret in clear in a copy of the database, and nothing in it signs a token', async () => {
    const copy = copyOfDatabase();
    const key = Buffer.from(signingKey, 'base64');
    const secretsKey = readFileSync(join(dir, 'secrets.key'), 'utf8').trim();
    for (const [what, value] of [
      ['the signing key (base64)', Buffer.from(signingKey)],
      ['the signing key (bytes)', key],
      ['the signing key (hex)', Buffer.from(key.toString('hex'))],
      ['the Ceph keyring', Buffer.from(keyring)],
      ['the keyring line', Buffer.from(keyring.split('\n')[1] ?? '')],
      ['the artifact', Buffer.from(artifactSecret)],
      ['the mail body', Buffer.from(mailSecret)],
      ['the secrets key', Buffer.from(secretsKey)],
      ['the secrets key (bytes)', Buffer.from(secretsKey, 'base64')],
    ] as const) {
      expect(copy.includes(value), what).toBe(false);
    }
    // What is not secret is there in clear: the search reads the right bytes.
    expect(copy.includes(Buffer.from('vault'))).toBe(true);

    const r = await start();
    try {
      const live = await r.db.get<{ jti: string; userId: string }>(sql`SELECT jti, user_id AS "userId" FROM tokens WHERE revoked_at IS NULL LIMIT 1`);
      expect(live).toBeDefined();
      const forge = (secret: Uint8Array) =>
        new SignJWT({})
          .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
          .setSubject(live?.userId ?? '')
          .setJti(live?.jti ?? '')
          .setIssuedAt()
          .setExpirationTime('10m')
          .setIssuer('carapace')
          .sign(secret);
      const answer = async (forged: string) => (await r.app.inject({ method: 'GET', url: '/v1/user/', headers: { authorization: forged } })).statusCode;
      // The forgery itself is right: with the real key it passes.
      expect(await answer(await forge(key))).toBe(200);
      const candidates: Uint8Array[] = [];
      for (const value of await everyValue(r.db)) {
        candidates.push(Buffer.from(value));
        const decoded = Buffer.from(value.replace(/^cpk1:[0-9a-f]+:/, ''), 'base64');
        if (decoded.length > 0) candidates.push(decoded);
      }
      expect(candidates.length).toBeGreaterThan(20);
      for (const candidate of candidates) expect(await answer(await forge(candidate))).toBe(401);
    } finally {
      await r.stop();
    }
  });

  it('rotates the key all or nothing: then the old key opens nothing, tokens still verify, the cinder files are the same', async () => {
    const keyFile = join(dir, 'secrets.key');
    const oldKey = Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64');
    const db = await openDatabase(location);
    const repo = new EncryptionRepository(db);
    let report: Awaited<ReturnType<typeof rotateKey>> | undefined;
    try {
      // A value that does not open (a sealed keyring moved to another row) fails the rotation: nothing changes.
      const files = new ClusterFileRepository(db, new SecretBox(oldKey));
      await files.put('00000000-0000-4000-8000-00000000beef', 'ceph.conf', 'moved', 1);
      const original = await db.get<{ content: string }>(sql`SELECT content FROM cluster_files WHERE name = 'ceph.client.cinder.keyring'`);
      await db.run(sql`UPDATE cluster_files SET content = ${original?.content ?? ''} WHERE cluster_id = '00000000-0000-4000-8000-00000000beef'`);
      const before = await repo.all();
      await expect(rotateKey(config, db, 2)).rejects.toThrow(SecretsError);
      expect(await repo.all()).toEqual(before);
      expect(readFileSync(keyFile, 'utf8').trim()).toBe(oldKey.toString('base64'));
      expect(existsSync(`${keyFile}.new`)).toBe(false);
      await db.run(sql`DELETE FROM cluster_files WHERE cluster_id = '00000000-0000-4000-8000-00000000beef'`);

      report = await rotateKey(config, db, 3);
      expect(report.values).toBe((await repo.all()).length);
      expect(report.values).toBeGreaterThanOrEqual(5);
      const oldBox = new SecretBox(oldKey);
      const newBox = new SecretBox(Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64'));
      expect(newBox.keyId).toBe(report.newKeyId);
      expect(readFileSync(report.retiredKeyFile ?? '', 'utf8').trim()).toBe(oldKey.toString('base64'));
      expect(existsSync(`${keyFile}.new`)).toBe(false);
      for (const { value, context } of await repo.all()) {
        expect(() => oldBox.openBytes(value, context), context).toThrow(SecretsError);
        expect(newBox.open(value, context).length, context).toBeGreaterThan(0);
      }
    } finally {
      await db.close();
    }

    // The key file is the owner's only: open to others, it is refused.
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    chmodSync(keyFile, 0o644);
    await expect(start()).rejects.toThrow(/secrets key .*secrets\.key is open to other users \(mode 644\): chmod 600/);
    chmodSync(keyFile, 0o600);

    // The old key in place of the new one: the control plane does not start, and says why in one line.
    const newKeyText = readFileSync(keyFile, 'utf8');
    writeFileSync(keyFile, `${oldKey.toString('base64')}\n`, { mode: 0o600 });
    const refused = await start().then(
      async (r) => {
        await r.stop();
        return null;
      },
      (err: unknown) => err as Error,
    );
    expect(refused).toBeInstanceOf(SecretsError);
    expect(refused?.message).toMatch(/encrypted with the key [0-9a-f]{16}, not with the key at .*secrets\.key/);
    expect(refused?.message).not.toContain('\n');
    writeFileSync(keyFile, newKeyText, { mode: 0o600 });

    const r = await start();
    try {
      expect((await r.app.inject({ method: 'GET', url: '/v1/user/', headers: { authorization: token } })).statusCode).toBe(200);
      const cinder = await r.app.inject({ method: 'GET', url: `/v1/cinder_integration/${clusterId}/`, headers: { authorization: token } });
      expect(cinder.body).toBe(cinderBefore);
    } finally {
      await r.stop();
    }

    // A rotation stopped after its commit, before its new key file was moved into place: the next start finishes it.
    renameSync(keyFile, `${keyFile}.new`);
    copyFileSync(report?.retiredKeyFile ?? '', keyFile);
    const resumed = await start();
    await resumed.stop();
    expect(readFileSync(keyFile, 'utf8')).toBe(newKeyText);
    expect(existsSync(`${keyFile}.new`)).toBe(false);
  });
});
