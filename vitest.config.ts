import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/kafka/**', 'test/package/packInstall.test.ts', '**/node_modules/**'],
          // The property files are long and CPU-bound; two cores run two files at a time.
          maxWorkers: 2,
        },
      },
      {
        // Against a real broker that the global set-up starts (port 19092) and stops. One file at a
        // time: each file runs worker processes beside the broker. After the unit project in one
        // `vitest run`; scripts/test.sh runs it in a vitest of its own, beside the others.
        extends: true,
        test: {
          name: 'kafka',
          include: ['test/kafka/**/*.test.ts'],
          globalSetup: ['test/kafka/globalSetup.ts'],
          maxWorkers: 1,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
          testTimeout: 240_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The packed package installed in an empty folder: the install builds the native Kafka
        // client from source (minutes on a busy machine). Runs last (scripts/test.sh: after the
        // unit project, beside the kafka project, at a lower priority).
        extends: true,
        test: {
          name: 'package',
          include: ['test/package/packInstall.test.ts'],
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
          hookTimeout: 1_800_000,
        },
      },
    ],
  },
});
