import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import LaneSequencer from './test/sequencer.js';

/** Every test file. */
const ALL = [
  'apps/*/src/**/*.test.ts',
  'apps/*/src/**/*.test.tsx',
  'apps/*/test/**/*.test.ts',
  'libs/*/src/**/*.test.ts',
  'libs/*/test/**/*.test.ts',
  'test/**/*.test.ts',
];

/**
 * The tests of what the database holds and serves, run a second time on PostgreSQL
 * (`CARAPACE_TEST_DATABASE=postgres`: test/support/database.ts gives each control plane a
 * fresh database on the run's PostgreSQL server): the API suite of the control plane, the
 * client library and the compatibility flow. A test matrix, not a copy: the same files.
 */
const ON_POSTGRES = ['apps/control-plane/test/**/*.test.ts', 'test/client/**/*.test.ts', 'test/compat/**/*.test.ts'];
/** Files of ON_POSTGRES that hold no data (configuration, builds, serving files), or that run on PostgreSQL in any case. */
const NOT_ON_POSTGRES = [
  'apps/control-plane/test/batcher.test.ts',
  'apps/control-plane/test/dispatch-passes.test.ts',
  'apps/control-plane/test/build-if-stale.test.ts',
  'apps/control-plane/test/config.test.ts',
  'apps/control-plane/test/log-format.test.ts',
  'apps/control-plane/test/npm-start.test.ts',
  'apps/control-plane/test/password-hashing.test.ts',
  'apps/control-plane/test/schema-parity.test.ts',
  'apps/control-plane/test/start.test.ts',
  'apps/control-plane/test/ui-serving.test.ts',
  'apps/control-plane/test/docs-serving.test.ts',
  'apps/control-plane/test/validator.test.ts',
  'apps/control-plane/test/replicas.test.ts',
  'apps/control-plane/test/postgres-round-trips.test.ts',
  'apps/control-plane/test/facts-replicas.test.ts',
  'apps/control-plane/test/status-replicas.test.ts',
  'apps/control-plane/test/migrate-to.test.ts',
];

export default defineConfig({
  resolve: { conditions: ['@carapace/source'] },
  ssr: { resolve: { conditions: ['@carapace/source'] } },
  test: {
    // Generous: two files run at a time on two cores, and a test that spawns many processes (the CLI
    // tests) can take three times its quiet time beside a Ceph file.
    testTimeout: 90_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two files at a time even on two cores: most files wait on processes, SSH and Ceph more than
    // they compute. The files that run a Ceph cluster go first, in two lanes side by side
    // (containers; a VM host under TCG), then the light files (test/sequencer.ts); a lock per
    // lane keeps one Ceph system of each kind at a time (test/e2e/ceph/system.ts).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    sequence: { sequencer: LaneSequencer },
    // The default reporter, and every 3 minutes which tests are still running (a run stopped
    // from outside then says what it was doing).
    reporters: ['default', './test/support/progress-reporter.ts'],
    // One PostgreSQL server for the run (test/support/README.md, PostgreSQL), shared by both projects.
    globalSetup: ['test/support/postgres.global-setup.ts'],
    projects: [
      { extends: true, test: { name: 'sqlite', include: ALL } },
      { extends: true, test: { name: 'postgres', include: ON_POSTGRES, exclude: NOT_ON_POSTGRES, env: { CARAPACE_TEST_DATABASE: 'postgres' } } },
    ],
  },
});
