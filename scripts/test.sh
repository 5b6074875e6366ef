#!/usr/bin/env bash
# The whole test suite from a fresh machine: installs what it needs, builds, type-checks, tests.
# `.ci/run` runs exactly this. ORDERLY_CRASH_SCHEDULES=N checks N random crash schedules instead
# of the default 10,000 (more for a longer search, fewer while developing). The Kafka tests (test/kafka) fetch the broker jars with Maven when they
# are not cached and start a broker of their own on port 19092 (ORDERLY_TEST_KAFKA_PORT), in their
# vitest global set-up, and stop it afterwards. The public API of each entry point is compared with
# its checked-in report (api/*.api.md; `npm run api:update` rewrites them after an intended change),
# and `npm run lint` checks the layers (no import points up a layer, no cycles), ESLint and Prettier.
# The last test file packs the package and installs it in an empty folder (it needs the npm registry).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
npm run -s build
npm run -s typecheck
npm run -s api:check
npm run -s lint
mkdir -p .cache
status=0
npx vitest run --reporter=default --reporter=json --outputFile.json=.cache/vitest-results.json || status=$?
# One plain closing line, 'N passed, N failed, N skipped', that any CI can read.
node -e '
  const r = JSON.parse(require("fs").readFileSync(".cache/vitest-results.json", "utf8"));
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
' || true
exit "$status"
