#!/usr/bin/env bash
# Installs the TypeScript compiler that the declarations' tests run (tsc over workflows) into
# <repo>/.tools/typescript (never globally) and prints the path of its binary. Running it again
# does nothing when that version is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/npm-tool.sh
npm_tool typescript typescript 5.9.3 tsc "Version 5.9.3"
