/** `npm run lab -- up N --discover`: the lab CLI's way to discoverLab(). */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { LAB_GATEWAY, LAB_STATE_DIR, listLabSlots } from './lab.js';
import type { HostKind, ImageOptions } from './lab.js';
import { DEFAULT_CONTROL_PLANE_URL, api, controlPlaneAccess, discoverLab, findCredentials, login } from './discover.js';
import { run } from './sys.js';

const CLI_DIR = join(LAB_STATE_DIR, 'cli');
/** What `up --discover` registered, for `down` to delete. */
const DISCOVERED_FILE = join(CLI_DIR, 'discovered.json');

interface DiscoveredRecord {
  url: string;
  dataDir: string;
  serverIds: string[];
}

export interface UpDiscoverOptions {
  hosts: number;
  /** Disk sizes in bytes given to every host (/dev/vdb, …). */
  disks?: readonly number[];
  url?: string;
  dataDir?: string;
  token?: string;
  timeoutS: number;
  image?: ImageOptions;
  /** Virtual machines instead of containers. */
  kind?: HostKind;
  out?: NodeJS.WritableStream;
}

/** Whether a process listens on the lab gateway address (a control plane started for lab hosts). */
export async function listensOnGateway(): Promise<boolean> {
  const r = await run('ss', ['-Hltn', 'src', LAB_GATEWAY], { check: false });
  return r.exitCode === 0 && r.stdout.trim() !== '';
}

/** Boots `hosts` persistent lab hosts that join the running control plane, and reports how they did. */
export async function upDiscover(opts: UpDiscoverOptions): Promise<void> {
  const out = opts.out ?? process.stdout;
  const say = (line = ''): void => void out.write(`${line}\n`);
  const existing = (await listLabSlots()).filter((s) => s.persistent);
  if (existing.length > 0) throw new Error(`a lab made by \`up\` exists already (${existing.map((s) => s.machine).join(' ')}); run \`npm run lab -- down\` first`);
  const dataDir = opts.dataDir ?? 'data';
  const url = opts.url ?? DEFAULT_CONTROL_PLANE_URL;
  const access = await controlPlaneAccess({ dataDir, url, token: opts.token });
  const keyFile = join(dataDir, 'runner', 'id_ed25519.pub');
  say(`control plane:   ${access.url} (answers)`);
  say(`discovery token: from ${access.tokenSource}`);
  say(`runner key:      ${keyFile} (${access.publicKey.split(' ').slice(0, 1).join('')} …${access.publicKey.slice(-12)})`);
  say(`checking with:   ${access.credentials ? `login ${access.credentials.login} (password from ${access.credentials.source})` : 'no password found (CARAPACE_ADMIN_PASSWORD, data/initial-admin-password): registration only'}`);

  const started = Date.now();
  const discovered = await discoverLab({
    hosts: Array.from({ length: opts.hosts }, () => ({ disks: opts.disks ?? [], kind: opts.kind })),
    access,
    name: 'cli',
    persistent: true,
    image: opts.image,
    timeoutMs: opts.timeoutS * 1000,
    keepOnFailure: true,
    log: (line) => say(`  ${line}`),
  }).catch((err: unknown) => {
    throw new Error(
      `${err instanceof Error ? err.message : String(err)}\n` +
        `(waited at most ${opts.timeoutS} s after boot; --timeout changes it. The hosts are left running to look at: \`npm run lab -- status\`; \`npm run lab -- down\` removes them.)`,
    );
  });
  await mkdir(CLI_DIR, { recursive: true, mode: 0o700 });
  const userDataFile = join(CLI_DIR, 'user-data');
  await writeFile(userDataFile, discovered.userData, { mode: 0o600 });

  const record: DiscoveredRecord = { url: access.url, dataDir, serverIds: discovered.hosts.map((h) => h.serverId) };
  await writeFile(DISCOVERED_FILE, `${JSON.stringify(record, null, 2)}\n`);
  say(`user-data:       ${userDataFile} (what \`carapace cloud-config --url ${access.url} TOKEN ${relative(process.cwd(), keyFile) || keyFile}\` prints)`);
  say();
  for (const h of discovered.hosts)
    say(`${h.host.name.padEnd(10)} ${h.host.ip.padEnd(12)} server ${h.serverId}  ${h.state ?? (discovered.checked === 'none' ? 'booted' : 'registered')}`);
  const t = discovered.timings;
  say();
  say(
    `${opts.hosts} host(s) booted in ${t.bootedS} s` +
      (t.registeredS === undefined ? '' : `, registered in ${t.registeredS} s`) +
      (t.operationalS === undefined ? '' : `, operational in ${t.operationalS} s`) +
      ` (${((Date.now() - started) / 1000).toFixed(1)} s in all)`,
  );
  say(`servers:         carapace server get-all -o table   (with CARAPACE_URL=${access.url})`);
  say('remove:          npm run lab -- down   (also deletes these servers from the control plane)');
}

/**
 * For `down`: deletes the servers `up --discover` registered from the control plane (their
 * hosts are gone; a new `up` gives new ids). Best effort: says what it could not do.
 */
export async function forgetDiscovered(out: NodeJS.WritableStream = process.stdout): Promise<void> {
  let record: DiscoveredRecord;
  try {
    record = JSON.parse(await readFile(DISCOVERED_FILE, 'utf8')) as DiscoveredRecord;
  } catch {
    return;
  }
  const say = (line: string): void => void out.write(`${line}\n`);
  const leftover = `delete them with carapace server delete ID: ${record.serverIds.join(' ')}`;
  try {
    const credentials = await findCredentials(record.dataDir);
    if (!credentials) {
      say(`no login to delete the lab's servers from ${record.url}; ${leftover}`);
    } else {
      const access = { url: record.url, credentials };
      const token = await login(access);
      const failed: string[] = [];
      for (const id of record.serverIds) {
        const res = await api(access, 'DELETE', `/v1/server/${id}/`, token);
        if (res.status !== 200 && res.status !== 404) failed.push(`${id}: HTTP ${res.status} ${String(res.json?.message ?? '')}`);
      }
      say(`deleted ${record.serverIds.length - failed.length} lab server(s) from ${record.url}`);
      for (const f of failed) say(`  not deleted: ${f}`);
    }
  } catch (err) {
    say(`could not delete the lab's servers from ${record.url} (${err instanceof Error ? err.message : String(err)}); ${leftover}`);
  }
  await rm(DISCOVERED_FILE, { force: true });
}
