#!/usr/bin/env bash
# Installs Debian's Chromium, which the HTML timeline's test loads its page in (headless), and
# prints the path of its binary. Running it again does nothing when it is there. Where it cannot
# be installed (no root, no sudo, no Debian registry) it says so on stderr and prints nothing:
# the test then skips, saying why.
set -uo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; else
      echo "install-chromium: not root and no sudo: the timeline's browser test will skip" >&2
      exit 0
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends chromium; } >&2; then
    echo "install-chromium: apt-get could not install chromium: the timeline's browser test will skip" >&2
    exit 0
  fi
fi
command -v chromium || true
