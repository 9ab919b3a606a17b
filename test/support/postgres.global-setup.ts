import type { TestProject } from 'vitest/node';
import { ENV_ENABLE, ENV_STATUS, ENV_URL, findPostgresBinDir, sweepStaleTestPostgres, TestPostgres } from './postgres.js';

/**
 * vitest globalSetup: one PostgreSQL server for the whole run, when the server binaries are
 * there and CARAPACE_TEST_POSTGRES is not `0` (and CARAPACE_TEST_POSTGRES_URL names no
 * server yet: one of your own, or the one a setup of another project of this run started).
 * It returns as soon as the server's URL is known: initdb and the start go on while the
 * first test files load, and testPostgresDatabase() waits for them. The workers learn the
 * URL from inject('carapacePostgres') and from the environment they inherit
 * (CARAPACE_TEST_POSTGRES_URL, CARAPACE_TEST_POSTGRES_STATUS). The teardown stops it, and
 * removes the directories of the servers workers started for themselves (vitest ends
 * workers with SIGTERM: their servers die with them, their directories stay).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let server: TestPostgres | null = null;
  if (process.env[ENV_ENABLE] !== '0' && !process.env[ENV_URL] && findPostgresBinDir()) {
    server = await TestPostgres.launch();
    process.env[ENV_URL] = server.url;
    process.env[ENV_STATUS] = server.statusFile;
  }
  const url = process.env[ENV_URL];
  project.provide('carapacePostgres', url ? { url, statusFile: process.env[ENV_STATUS] ?? '' } : null);
  return async () => {
    if (server) {
      delete process.env[ENV_URL];
      delete process.env[ENV_STATUS];
      await server.stop();
    }
    sweepStaleTestPostgres();
  };
}
