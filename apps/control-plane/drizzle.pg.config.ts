import { defineConfig } from 'drizzle-kit';

/** PostgreSQL migrations (the SQLite ones are `drizzle.config.ts`'s): `npm run db:generate:pg`. */
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema-pg/index.ts',
  out: './drizzle/postgres',
});
