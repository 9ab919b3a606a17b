// `carapace-control-plane backup FILE` and `restore FILE` on SQLite, as an operator runs them
// (the command's main, in this process): a backup of a running installation restores into a
// new data directory that serves the same answers; a restore refuses an existing
// installation, a missing or wrong key (one line naming the key), a file that is no backup;
// scheduled backups keep the newest `keep`.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackupSchedule, buildApp, createContainer, createLogger, loadConfig, main, openDatabase } from '@carapace/control-plane';
import { Harness, ROOT_PASSWORD } from '@carapace/test-support/harness';
import { eventually } from '@carapace/test-support/eventually';

/** Runs the command; its exit status and what it wrote on stderr. */
async function command(args: string[]): Promise<{ code: number; output: string }> {
  const lines: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = (chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  };
  try {
    return { code: await main(args), output: lines.join('') };
  } finally {
    process.stderr.write = write;
  }
}

describe('backup and restore of an SQLite installation', { timeout: 60_000 }, () => {
  let root: string;
  let dataDir: string;
  let h: Harness;
  let token = '';
  const paths = ['/v1/user/', '/v1/role/', '/v1/cluster/'];
  const answers = new Map<string, string>();

  /** A configuration file for the commands: its data directory, and a key file when given. */
  function configFile(name: string, dir: string, extra = ''): string {
    const file = join(root, `${name}.yaml`);
    writeFileSync(file, `dataDir: ${dir}\nrunner: none\nlogLevel: silent\n${extra}`);
    return file;
  }

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'carapace-backup-'));
    dataDir = join(root, 'live');
    mkdirSync(join(dataDir, 'runner'), { recursive: true, mode: 0o700 });
    // The data directory's other state: the discovery token file and the embedded runner's key.
    writeFileSync(join(dataDir, 'discovery-token'), 'a-discovery-token-of-this-installation\n', { mode: 0o600 });
    writeFileSync(join(dataDir, 'runner', 'id_ed25519'), '-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n', { mode: 0o600 });
    h = await Harness.start({ CARAPACE_DATA_DIR: dataDir }, { databaseFile: join(dataDir, 'carapace.db') });
    token = await h.rootToken();
    await h.request('POST', '/v1/cluster/', { token, body: { name: 'backed-up' } });
    for (const path of paths) answers.set(path, (await h.request('GET', path, { token })).body);
  });
  afterAll(async () => {
    await h?.stop().catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
  });

  it('backs up the running installation, and restores it into a new data directory that answers the same', async () => {
    const file = join(root, 'one.backup');
    const live = configFile('live', dataDir);
    const made = await command(['backup', file, '--config', live]);
    expect(made.code, made.output).toBe(0);
    expect(made.output).toMatch(/backup written: .*one\.backup \(\d+ bytes, 2 files of the data directory/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(root).filter((n) => n.includes('.partial-'))).toEqual([]);
    // The key is not in the backup, nor any file in clear.
    const bytes = readFileSync(file);
    expect(bytes.includes(Buffer.from(readFileSync(join(dataDir, 'secrets.key'), 'utf8').trim()))).toBe(false);
    expect(bytes.includes(Buffer.from('not-a-real-key'))).toBe(false);
    expect(bytes.includes(Buffer.from('a-discovery-token-of-this-installation'))).toBe(false);
    // Never over an existing file.
    const again = await command(['backup', file, '--config', live]);
    expect(again.code).toBe(1);
    expect(again.output).toMatch(/exists already/);

    // Restoring over the live installation is refused, and changes nothing.
    const over = await command(['restore', file, '--config', live]);
    expect(over.code).toBe(1);
    expect(over.output).toMatch(/holds an installation already .*never overwrites/);

    // Into a new data directory without the key: one line, naming the key it needs.
    const target = join(root, 'restored');
    const restoredConfig = configFile('restored', target);
    const keyless = await command(['restore', file, '--config', restoredConfig]);
    expect(keyless.code).toBe(1);
    expect(keyless.output).toMatch(/^carapace-control-plane restore: .* holds secrets encrypted with the key [0-9a-f]{16}, and there is no key at .*secrets\.key/);
    expect(keyless.output.trim().split('\n')).toHaveLength(1);
    expect(existsSync(join(target, 'carapace.db'))).toBe(false);
    // With another key: one line too.
    const otherKey = join(root, 'other.key');
    writeFileSync(otherKey, `${Buffer.alloc(32, 7).toString('base64')}\n`, { mode: 0o600 });
    const wrong = await command(['restore', file, '--config', configFile('wrong', target, `secrets:\n  keyFile: ${otherKey}\n`)]);
    expect(wrong.code).toBe(1);
    expect(wrong.output).toMatch(/encrypted with the key [0-9a-f]{16}, not with the key at .*other\.key/);
    // A file that is not a backup.
    writeFileSync(join(root, 'junk.backup'), 'not a database');
    const junk = await command(['restore', join(root, 'junk.backup'), '--config', configFile('junk', join(root, 'junk'))]);
    expect(junk.code).toBe(1);
    expect(junk.output).toMatch(/is not a Carapace backup/);

    // With the key (the installation's key file, named by the configuration): restored.
    const withKey = configFile('with-key', target, `secrets:\n  keyFile: ${join(dataDir, 'secrets.key')}\n`);
    const restored = await command(['restore', file, '--config', withKey]);
    expect(restored.code, restored.output).toBe(0);
    expect(restored.output).toMatch(/restored the backup of .* secrets opened with the key [0-9a-f]{16}, 2 files/);
    expect(readFileSync(join(target, 'discovery-token'), 'utf8')).toBe('a-discovery-token-of-this-installation\n');
    expect(statSync(join(target, 'runner', 'id_ed25519')).mode & 0o777).toBe(0o600);
    expect(readdirSync(target).filter((n) => n.startsWith('.restore-'))).toEqual([]);

    const config = loadConfig({
      env: { CARAPACE_DATA_DIR: target, CARAPACE_SECRETS_KEY_FILE: join(dataDir, 'secrets.key'), CARAPACE_RUNNER: 'none', CARAPACE_LOG_LEVEL: 'silent', CARAPACE_DISCOVERY_TOKEN: 'restored-discovery-token-0123456789' },
    });
    const logger = createLogger('silent');
    const container = await createContainer(config, await openDatabase(join(target, 'carapace.db')), logger, { mailer: { send: async () => undefined, close: async () => undefined } });
    const app = await buildApp({ services: container.services, logger });
    try {
      const login = await app.inject({ method: 'POST', url: '/v1/auth/', payload: { username: 'root', password: ROOT_PASSWORD } });
      expect(login.statusCode).toBe(200);
      // A token of the original installation verifies on the restored one: the signing key came back.
      for (const path of paths) {
        const res = await app.inject({ method: 'GET', url: path, headers: { authorization: token } });
        expect(JSON.parse(res.body), path).toEqual(JSON.parse(answers.get(path) ?? 'null'));
      }
    } finally {
      await app.close();
      await container.close();
    }
  });

  it('refuses PostgreSQL installations, pointing to pg_dump', async () => {
    const out = await command(['backup', join(root, 'pg.backup'), '--config', configFile('pg', dataDir, 'database:\n  url: postgres://u:p@127.0.0.1:1/db\n')]);
    expect(out.code).toBe(1);
    expect(out.output).toMatch(/the database is PostgreSQL: back it up with pg_dump/);
    expect(out.output).not.toContain('u:p@');
  });

  it('takes scheduled backups and keeps the newest `keep`', async () => {
    const dir = join(root, 'scheduled');
    const config = loadConfig({ env: { CARAPACE_DATA_DIR: dataDir, CARAPACE_BACKUP_DIR: dir, CARAPACE_BACKUP_INTERVAL_S: '3600', CARAPACE_BACKUP_KEEP: '2' } });
    const schedule = new BackupSchedule(config, createLogger('silent'));
    const t = Date.parse('2026-01-02T03:04:05.000Z');
    for (let i = 0; i < 3; i++) await schedule.runOnce(new Date(t + i * 1000));
    expect(readdirSync(dir).sort()).toEqual(['carapace-20260102T030406000Z.backup', 'carapace-20260102T030407000Z.backup']);
    await schedule.start()();
    // Started, it takes one each interval by itself.
    const every = join(root, 'every-second');
    const ticking = new BackupSchedule(loadConfig({ env: { CARAPACE_DATA_DIR: dataDir, CARAPACE_BACKUP_DIR: every, CARAPACE_BACKUP_INTERVAL_S: '1' } }), createLogger('silent'));
    const stop = ticking.start();
    try {
      await eventually('a scheduled backup', () => existsSync(every) && readdirSync(every).some((n) => n.endsWith('.backup')), 10_000);
    } finally {
      await stop();
    }
  });
});
