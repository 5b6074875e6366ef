import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The property files are long and CPU-bound; two cores run two files at a time.
    maxWorkers: 2,
    testTimeout: 60_000,
    reporters: ['default'],
  },
});
