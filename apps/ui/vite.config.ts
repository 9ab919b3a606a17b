import react from '@vitejs/plugin-react';
import { defaultClientConditions, defineConfig } from 'vite';

const apiTarget = process.env.CARAPACE_UI_API ?? 'http://127.0.0.1:8080';

export default defineConfig({
  plugins: [react()],
  resolve: {
    // The workspace libraries from their sources; their `browser` condition (package.json
    // `imports`) swaps their Node-only modules for browser ones: @carapace/client's TLS
    // dispatcher (undici, node:fs), @carapace/cloud-init's certificate check (node:crypto).
    conditions: ['@carapace/source', ...defaultClientConditions],
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
