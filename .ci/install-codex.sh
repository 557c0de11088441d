#!/usr/bin/env bash
# Installs the Codex CLI that the app-server backend's tests run against into <repo>/.tools/codex
# (never globally) and prints the path of its binary. Running it again does nothing when that
# version is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/npm-tool.sh
npm_tool codex @openai/codex 0.169.0 codex "codex-cli 0.169.0"
