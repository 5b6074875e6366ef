#!/usr/bin/env bash
# The whole test suite from a fresh machine: installs what it needs, builds, type-checks, tests.
# `.ci/run` runs exactly this. ORDERLY_CRASH_SCHEDULES=N checks N random crash schedules instead
# of the default 10,000 (more for a longer search, fewer while developing). The Kafka tests (test/kafka) fetch the broker jars with Maven when they
# are not cached and start a broker of their own on port 19092 (ORDERLY_TEST_KAFKA_PORT), in their
# vitest global set-up, and stop it afterwards. The public API of each entry point is compared with
# its checked-in report (api/*.api.md; `npm run api:update` rewrites them after an intended change),
# and `npm run lint` checks the layers (no import points up a layer, no cycles), ESLint and Prettier.
# The last test file packs the package and installs it in an empty folder (it needs the npm registry).
#
# After setup.sh (which compiles), two lanes run at once, since the broker tests mostly wait (on
# the broker, on the workers' model calls, on sessions to expire) while everything else keeps the
# cores busy:
#   - the broker lane: the kafka project, one file at a time;
#   - the checks lane, at a lower priority (nice 10), so that the broker lane gets a core whenever
#     it wants one and its timings stay as they were alone: typecheck, api:check, lint, the unit
#     project (the crash properties included), then the package project.
# Each vitest run writes its JSON report to .cache/; the closing line adds them up. The checks
# lane's output is printed when both lanes have ended. Any failure in either lane fails the run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
mkdir -p .cache
rm -f .cache/vitest-*.json .cache/checks-lane.log

# setup.sh has just compiled dist/: the broker tests' global set-up must not compile it again
# under the feet of the other lane's tests, which read it.
export ORDERLY_TEST_BUILT=1

# vitest over one project, with its JSON report in .cache/vitest-<project>.json.
vitest_project() {
  npx vitest run --project "$1" --reporter=default --reporter=json --outputFile.json=".cache/vitest-$1.json"
}

(
  set +e
  renice -n 10 -p "$BASHPID" >/dev/null
  failed=0
  for step in 'npm run -s typecheck' 'npm run -s api:check' 'npm run -s lint' 'vitest_project unit' 'vitest_project package'; do
    echo "--- $step"
    started=$SECONDS
    $step || { failed=1; echo "--- failed: $step"; }
    echo "--- $step: $((SECONDS - started)) s"
  done
  exit "$failed"
) >.cache/checks-lane.log 2>&1 &
checks_lane=$!

status=0
vitest_project kafka || status=$?
wait "$checks_lane" || status=1
echo
echo "=== the checks lane (it ran beside the broker tests): typecheck, api:check, lint, the unit and package projects ==="
cat .cache/checks-lane.log

# One plain closing line, 'N passed, N failed, N skipped', that any CI can read.
node -e '
  const fs = require("fs");
  let passed = 0, failed = 0, skipped = 0;
  const failures = [];
  for (const project of ["unit", "kafka", "package"]) {
    const file = `.cache/vitest-${project}.json`;
    if (!fs.existsSync(file)) { console.log(`the ${project} project wrote no report (${file}): vitest did not run to its end`); continue; }
    const r = JSON.parse(fs.readFileSync(file, "utf8"));
    passed += r.numPassedTests; failed += r.numFailedTests; skipped += r.numPendingTests + r.numTodoTests;
    // The failures again, last: a CI that keeps only the tail of the output still names them.
    for (const file of r.testResults ?? [])
      for (const t of file.assertionResults ?? [])
        if (t.status === "failed") {
          const why = (t.failureMessages ?? []).join("\n").split("\n").slice(0, 6).join("\n    ");
          failures.push(`FAILED [${project}] ${file.name.replace(process.cwd() + "/", "")} > ${t.fullName}\n    ${why}`);
        }
  }
  for (const f of failures) console.log(f);
  console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
' || true
exit "$status"
