#!/usr/bin/env bash
# The whole test suite from a fresh machine: installs what it needs, builds, type-checks, tests.
# `.ci/run` runs exactly this. ORDERLY_CRASH_SCHEDULES=N checks more than the default 10,000
# random crash schedules.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
npm run -s build
npm run -s typecheck
npx vitest run
