#!/usr/bin/env bash
# Builds the real etcd server that the etcd store's tests run clusters of (internal/etcdtest)
# into <repo>/.tools/etcd-<version>/etcd, from the module internal/etcdtest/etcdbin pins (the
# Go module proxy serves it), and prints the path of the binary. Running it again does nothing
# when that version is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n 's#.*go.etcd.io/etcd/server/v3 \(v[0-9.]*\).*#\1#p' internal/etcdtest/etcdbin/go.mod | head -1)
[ -n "$version" ] || { echo "install-etcd: internal/etcdtest/etcdbin/go.mod names no etcd server version" >&2; exit 1; }
out=".tools/etcd-$version/etcd"
if ! { [ -x "$out" ] && "$out" --version 2>/dev/null | grep -q "etcd Version: ${version#v}"; }; then
  mkdir -p "$(dirname "$out")"
  (cd internal/etcdtest/etcdbin && go build -o "../../../$out.tmp" .) >&2
  mv "$out.tmp" "$out"
fi
echo "$PWD/$out"
