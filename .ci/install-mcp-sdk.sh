#!/usr/bin/env bash
# Installs the official TypeScript MCP SDK, whose client the MCP server's tests run against crw
# mcp, into <repo>/.tools/mcp-sdk (never globally) and prints its package folder. Running it again
# does nothing when that version is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
version=1.32.2
prefix="$PWD/.tools/mcp-sdk"
pkg="$prefix/node_modules/@modelcontextprotocol/sdk"
installed() { [ -f "$pkg/package.json" ] && grep -q "\"version\": \"$version\"" "$pkg/package.json"; }
if ! installed; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/sdk@$version" >&2
  if ! installed; then
    echo "install mcp-sdk: $pkg is not @modelcontextprotocol/sdk $version after npm install" >&2
    exit 1
  fi
fi
echo "$pkg"
