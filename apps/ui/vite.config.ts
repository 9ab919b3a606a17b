import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defaultClientConditions, defineConfig } from 'vite';

// `@carapace/client` loads undici and node:fs lazily, only for Node's TLS options (client
// certificates, verify: false). The browser never takes that path: both resolve to an empty
// module, so the build never bundles them.
const empty = fileURLToPath(new URL('./src/empty-module.ts', import.meta.url));
const apiTarget = process.env.CARAPACE_UI_API ?? 'http://127.0.0.1:8080';

export default defineConfig({
  plugins: [react()],
  resolve: {
    conditions: ['@carapace/source', ...defaultClientConditions],
    alias: [
      { find: /^undici$/, replacement: empty },
      { find: /^node:fs(\/promises)?$/, replacement: empty },
      // @carapace/cloud-init checks CA bundles with node:crypto's X509Certificate; the
      // cloud-config page offers no CA bundle, so that check never runs in the browser.
      { find: /^node:crypto$/, replacement: empty },
    ],
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 700,
    rollupOptions: {
      output: {
        manualChunks(id: string) {
          if (id.includes('node_modules/@codemirror/') || id.includes('node_modules/@lezer/') || id.includes('node_modules/codemirror/')) return 'codemirror';
          return undefined;
        },
      },
    },
  },
  // The API, and the documentation site the Help menu opens (served by the control plane at /docs/).
  server: {
    proxy: { '/v1': { target: apiTarget, changeOrigin: false }, '/docs': { target: apiTarget, changeOrigin: false } },
  },
  preview: {
    proxy: { '/v1': { target: apiTarget, changeOrigin: false }, '/docs': { target: apiTarget, changeOrigin: false } },
  },
});
