import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';
import carapace from './scripts/eslint-import-cycles.js';

/** Imports across packages go through a package's public entry (every file; the control plane's also forbid drizzle-orm outside db/). */
const PACKAGE_BOUNDARIES = [
  {
    regex: '^@carapace/[^/]+/(src|test|dist)(/|$)',
    message: "Import the package's public entry (its package.json `exports`), not its internals.",
  },
  {
    regex: '(^|/)(apps|libs)/[^/]+/(src|test|dist)(/|$)',
    message: "Import the package by name (@carapace/...), through its public entry, not by path into its files.",
  },
];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'data/**', '**/drizzle/**', 'libs/protocol/src/generated/**', '**/*.js', '!eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // Tests read answers as parsed JSON of any shape.
    files: ['**/test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // One-way layers: a package reaches another only through its public entry (package.json
    // `exports`), never through its src/ or test/ files; shared test code is
    // @carapace/test-support. And no module imports itself back through a cycle, not even
    // through type-only imports (scripts/eslint-import-cycles.js: import-x/no-cycle skips them).
    files: ['**/*.{ts,tsx,mts,cts}'],
    plugins: { 'import-x': importX, carapace },
    settings: {
      'import-x/extensions': ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx', '.mts', '.cts'] },
      'import-x/resolver-next': [
        // `.js` specifiers resolve to the `.ts` sources (the resolver's default extension
        // aliases); workspace packages to their sources, as vitest and tsc resolve them.
        createTypeScriptImportResolver({
          project: 'tsconfig.json',
          conditionNames: ['@carapace/source', 'types', 'import', 'node', 'default'],
        }),
      ],
    },
    rules: {
      'import-x/no-relative-packages': 'error',
      'no-restricted-imports': [
        'error',
        {
          patterns: PACKAGE_BOUNDARIES,
        },
      ],
      'carapace/no-import-cycle': 'error',
    },
  },
  {
    // The control plane's SQL stays in db/: services combine the repositories' conditions
    // (db/condition.ts) and never write or read a statement.
    files: ['apps/control-plane/src/**/*.ts'],
    ignores: ['apps/control-plane/src/db/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'drizzle-orm', message: 'SQL belongs to db/: ask a repository, or combine its Conditions (db/condition.ts).' }],
          patterns: PACKAGE_BOUNDARIES,
        },
      ],
    },
  },
  {
    // What differs between SQLite and PostgreSQL lives in one module per engine, behind
    // `SqlEngine` (db/engine.ts): no other code of the control plane asks which engine it runs
    // on (`db.dialect`, or a comparison with a `dialect`); it asks `db.engine`.
    files: ['apps/control-plane/src/**/*.ts'],
    ignores: ['apps/control-plane/src/db/{sqlite,postgres,sqlite-engine,postgres-engine}.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[property.name='dialect']",
          message: 'Ask the engine (db.engine, db/engine.ts) what differs between SQLite and PostgreSQL, not which one it is.',
        },
        {
          selector: "BinaryExpression > Identifier[name='dialect']",
          message: 'Ask the engine (db.engine, db/engine.ts) what differs between SQLite and PostgreSQL, not which one it is.',
        },
      ],
    },
  },
  {
    // The web UI: eslint-plugin-react-hooks' recommended rules (the rules of hooks, and
    // React Compiler's checks: no ref read or written during render, no setState in an
    // effect's body or unconditionally in render, pure renders, ...), and effects that name
    // what they read.
    files: ['apps/ui/**/*.{ts,tsx}'],
    ...reactHooks.configs.flat.recommended,
    rules: {
      ...reactHooks.configs.flat.recommended.rules,
      'react-hooks/exhaustive-deps': 'error',
    },
  },
  { files: ['eslint.config.js'], ...tseslint.configs.disableTypeChecked },
);
