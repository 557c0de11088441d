#!/usr/bin/env bash
# Installs Debian's Chromium, which the HTML timeline's test loads its page in (headless), and
# prints the path of its binary. Running it again does nothing when it is there.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >&2
  $sudo apt-get install -y -qq --no-install-recommends chromium >&2
fi
command -v chromium
