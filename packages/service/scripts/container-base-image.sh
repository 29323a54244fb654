#!/usr/bin/env bash
# Makes sure podman has the image the Containerfile starts FROM (node:22-bookworm-slim). With no container registry
# to pull it from, it makes the same thing here: Debian bookworm (debootstrap --variant=minbase, from the mirror apt
# uses) plus the official Node 22 binary (the workspace's `node` package) and npm (the npm registry's `npm` package).
# Run as root, with podman and debootstrap installed (scripts/container-test.sh does both). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE="docker.io/library/node:22-bookworm-slim"
NPM_VERSION="10.9.4"
if podman image exists "$IMAGE"; then
  exit 0
fi
started=$(date +%s)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
# The mirror apt uses here (never written into the image: the files that name it are removed below).
mirror="$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
[ -n "$mirror" ] || mirror="$(awk '/^deb / { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)"
[ -n "$mirror" ] || { echo "container-base-image: no Debian mirror in apt's sources" >&2; exit 1; }
echo "container-base-image: debootstrap bookworm (minbase)…" >&2
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
rm -f "$root/var/log/bootstrap.log" "$root/etc/apt/sources.list" "$root"/var/cache/apt/*.bin
rm -rf "$root"/var/lib/apt/lists/*
# Node 22: the binary the official image carries (the workspace's `node` devDependency ships it).
node_bin="$(node -p 'require("path").join(require("path").dirname(require.resolve("node/package.json", { paths: [process.cwd() + "/../.."] })), "bin", "node")')"
"$node_bin" --version | grep -q '^v22\.' || { echo "container-base-image: $node_bin is not Node 22" >&2; exit 1; }
install -m 0755 "$node_bin" "$root/usr/local/bin/node"
# npm, laid out as in the official image (/usr/local/lib/node_modules/npm, npm and npx on PATH).
(cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
mkdir -p "$root/usr/local/lib/node_modules/npm"
tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
tar -C "$root" -c . | podman import --change 'CMD ["node"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$IMAGE" >/dev/null
echo "container-base-image: $IMAGE made here in $(( $(date +%s) - started )) s" >&2
