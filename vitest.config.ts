import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['@carapace/source'] },
  ssr: { resolve: { conditions: ['@carapace/source'] } },
  test: {
    include: ['apps/*/src/**/*.test.ts', 'apps/*/src/**/*.test.tsx', 'apps/*/test/**/*.test.ts', 'libs/*/src/**/*.test.ts', 'libs/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
