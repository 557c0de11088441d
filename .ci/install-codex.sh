#!/usr/bin/env bash
# Installs the Codex CLI that the app-server backend's tests run against into <repo>/.tools/codex
# (never globally) and prints the path of its binary. Running it again does nothing when that
# version is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

version=0.169.0
prefix="$PWD/.tools/codex"
bin="$prefix/node_modules/.bin/codex"

installed() {
  [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null)" = "codex-cli $version" ]
}

if ! installed; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "@openai/codex@$version" >&2
  if ! installed; then
    echo "install-codex: $bin is not codex $version after npm install" >&2
    exit 1
  fi
fi
echo "$bin"
