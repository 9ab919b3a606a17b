import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from './config.js';
import { ConfigError } from './config.js';

/** Name of the file, under the data directory, that holds the generated discovery token. */
export const DISCOVERY_TOKEN_FILE = 'discovery-token';

/** The service accepts discovery tokens of at least this many characters (`discoveryTokens` in config.ts). */
const MIN_TOKEN_LENGTH = 16;

export interface DiscoveryTokenLog {
  info(obj: object, msg: string): void;
}

/**
 * The configuration with a discovery token servers can register with. Configured tokens
 * (`discoveryTokens`, `CARAPACE_DISCOVERY_TOKEN`) win and the file is not looked at.
 * Without any, the token is read from `<dataDir>/discovery-token`, which the first start
 * creates (48 random hex characters, mode 0600), so that an operator, `carapace
 * cloud-config` and the lab can read it. The log names the file, never the token.
 * Hex, not base64url: a token starting with '-' would be read as an option by a CLI.
 */
export function withDiscoveryToken(config: Config, log: DiscoveryTokenLog): Config {
  if (config.discoveryTokens.length > 0) return config;
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const file = join(config.dataDir, DISCOVERY_TOKEN_FILE);
  let token = readToken(file);
  if (token === undefined) {
    try {
      // 'wx': two first starts at once do not overwrite each other's token.
      writeFileSync(file, `${randomBytes(24).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
      chmodSync(file, 0o600);
      log.info({ file }, 'generated a discovery token for server registration (no discoveryTokens configured); it is in this file');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    token = readToken(file);
  } else {
    log.info({ file }, 'discovery token read from the data directory (no discoveryTokens configured)');
  }
  if (token === undefined || token.length < MIN_TOKEN_LENGTH) {
    throw new ConfigError(`${file} must hold a discovery token of at least ${MIN_TOKEN_LENGTH} characters on its first line (delete it to generate a new one)`);
  }
  return Object.freeze({ ...config, discoveryTokens: Object.freeze([token]) as string[] });
}

function readToken(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').split('\n')[0]?.trim() ?? '';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
