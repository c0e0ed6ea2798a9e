import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Built into dist/ and served by observe at / (packages/observe/src/dashboard/routes.ts).
// `npm run dev -w @vigil/dashboard` serves the app with hot reload and forwards /api and
// /gate/api to a running `npm start` (observe on 3400 forwards /gate/api to the gate).
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    target: 'es2022',
    chunkSizeWarningLimit: 400,
  },
  server: {
    proxy: {
      '/api': 'http://localhost:3400',
      '/gate/api': 'http://localhost:3400',
    },
  },
});
