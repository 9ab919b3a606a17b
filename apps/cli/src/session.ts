import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/** What a profile remembers: the control plane and who logs in to it. */
export interface Profile {
  readonly url: string;
  readonly login: string;
}

/** A stored login: the token, for the control plane and user it was issued by and to. */
export interface Session extends Profile {
  readonly token: string;
  /** Unix seconds. */
  readonly expires_at: number;
}

/** The profile used when none is named. */
export const DEFAULT_PROFILE = 'default';

const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Whether `name` may name a profile (it names files: no "/", no leading "."). */
export function isProfileName(name: string): boolean {
  return PROFILE_NAME.test(name);
}

/**
 * The directory of the CLI's settings: `$XDG_CONFIG_HOME/carapace`, or
 * `~/.config/carapace` (the XDG base directory rule: a relative XDG_CONFIG_HOME is ignored).
 */
export function configDir(env: Readonly<Record<string, string | undefined>>): string {
  const xdg = env.XDG_CONFIG_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, 'carapace');
  return join(env.HOME || homedir(), '.config', 'carapace');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function readJson(file: string): Promise<Record<string, unknown> | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : null;
  } catch {
    // A damaged file counts as absent: the next login rewrites it.
    return null;
  }
}

/**
 * The profiles and sessions of the CLI, one file each under {@link configDir}:
 * `profiles/NAME.json` (URL and login) and `sessions/NAME.json` (the token and its expiry).
 * Directories are created 0700 and files written 0600, through a rename so that a reader
 * never sees half a file.
 */
export class SessionStore {
  constructor(readonly dir: string) {}

  /** The file of a profile's session. */
  sessionFile(profile: string): string {
    return join(this.dir, 'sessions', `${profile}.json`);
  }

  /** The file of a profile. */
  profileFile(profile: string): string {
    return join(this.dir, 'profiles', `${profile}.json`);
  }

  /** The profile's URL and login, or null when it was never logged in with. */
  async profile(name: string): Promise<Profile | null> {
    const value = await readJson(this.profileFile(name));
    if (!value || typeof value.url !== 'string' || typeof value.login !== 'string') return null;
    return { url: value.url, login: value.login };
  }

  /** The profile's stored session, or null. */
  async session(name: string): Promise<Session | null> {
    const value = await readJson(this.sessionFile(name));
    if (!value) return null;
    const { url, login, token, expires_at } = value;
    if (typeof url !== 'string' || typeof login !== 'string' || typeof token !== 'string' || typeof expires_at !== 'number') return null;
    return { url, login, token, expires_at };
  }

  /** Stores a session and remembers its URL and login as the profile's. */
  async save(name: string, session: Session): Promise<void> {
    await this.write(this.profileFile(name), { url: session.url, login: session.login });
    await this.write(this.sessionFile(name), session);
  }

  /** Removes a profile's session (the profile stays). */
  async removeSession(name: string): Promise<void> {
    await rm(this.sessionFile(name), { force: true });
  }

  private async write(file: string, value: object): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    // Ours alone: a directory made by hand with a looser mode is tightened.
    await chmod(this.dir, 0o700);
    const folder = join(file, '..');
    await mkdir(folder, { recursive: true, mode: 0o700 });
    await chmod(folder, 0o700);
    const temporary = `${file}.${process.pid}.tmp`;
    try {
      await writeFile(temporary, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
      await chmod(temporary, 0o600);
      await rename(temporary, file);
    } finally {
      await rm(temporary, { force: true });
    }
  }
}
