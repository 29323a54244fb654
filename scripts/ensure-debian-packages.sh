#!/usr/bin/env bash
# Makes sure a program the tests need is there, installing Debian's packages for it with apt-get when run as root
# (the way every test dependency that npm cannot ship comes onto a fresh machine: Chromium, Redis, podman).
#   usage: ensure-debian-packages.sh <program path> <what needs it> <package>...
# Exit 0: the program is there (or was installed). Exit 3: it is not, and this is not CI (the caller skips, saying
# why). Exit 1: it is not, under CI (CI=true).
# Callers take turns (a lock): scripts/test.sh installs every part's packages in the background while the suite
# builds, and a part that gets here meanwhile waits for that install, then finds its program (apt-get refuses to run
# beside another apt-get).
set -euo pipefail
program="$1" needed_by="$2"
shift 2
if [ -x "$program" ]; then
  exit 0
fi
if command -v flock >/dev/null 2>&1; then
  exec 9>"${TMPDIR:-/tmp}/paymaster-debian-packages.lock"
  flock 9
  if [ -x "$program" ]; then
    exit 0
  fi
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-debian-packages: installing $* for $needed_by (apt-get)…" >&2
  export DEBIAN_FRONTEND=noninteractive
  if apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends "$@" >&2 && [ -x "$program" ]; then
    echo "ensure-debian-packages: $* installed" >&2
    exit 0
  fi
  echo "ensure-debian-packages: apt-get could not install $*" >&2
fi
message="$needed_by need $program: run 'apt-get update && apt-get install -y --no-install-recommends $*' as root"
if [ "${CI:-}" = "true" ]; then
  echo "ensure-debian-packages: $message" >&2
  exit 1
fi
echo "ensure-debian-packages: $message; skipping them" >&2
exit 3
