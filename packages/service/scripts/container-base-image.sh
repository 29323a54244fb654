#!/usr/bin/env bash
# Makes sure podman has the images the Containerfile starts FROM: node:22-bookworm (the build stage: it compiles
# native addons such as pkcs11js, so it has python3, make and g++, as the official image does) and
# node:22-bookworm-slim (the image that runs). With no container registry to pull them from, it makes the same
# things here: Debian bookworm (debootstrap --variant=minbase, from the mirror apt uses; the build one with
# python3, make and g++ included) plus the official Node 22 binary (the workspace's `node` package) and npm (the
# npm registry's `npm` package).
# Run as root, with podman and debootstrap installed (scripts/container-test.sh does both). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
NPM_VERSION="10.9.4"
# Bumped when what this script makes changes: an image made by an older version is made again.
BASE_REVISION="2"
# The mirror apt uses here (never written into the images: the files that name it are removed below).
mirror="$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
[ -n "$mirror" ] || mirror="$(awk '/^deb / { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)"
# Node 22: the binary the official image carries (the workspace's `node` devDependency ships it).
node_bin="$(node -p 'require("path").join(require("path").dirname(require.resolve("node/package.json", { paths: [process.cwd() + "/../.."] })), "bin", "node")')"

make_image() { # <image> <debootstrap --include list, or "">
  local image="$1" include="$2" started work root
  if [ "$(podman image inspect --format '{{ index .Config.Labels "paymaster.base-revision" }}' "$image" 2>/dev/null)" = "$BASE_REVISION" ]; then
    return 0
  fi
  podman image rm -f "$image" >/dev/null 2>&1 || true
  [ -n "$mirror" ] || { echo "container-base-image: no Debian mirror in apt's sources" >&2; exit 1; }
  started=$(date +%s)
  work="$(mktemp -d)"
  root="$work/rootfs"
  echo "container-base-image: debootstrap bookworm (minbase${include:+, with $include}) for $image…" >&2
  debootstrap --variant=minbase ${include:+--include="$include"} bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; rm -rf "$work"; exit 1; }
  rm -f "$root/var/log/bootstrap.log" "$root/etc/apt/sources.list" "$root"/var/cache/apt/*.bin
  rm -rf "$root"/var/lib/apt/lists/*
  # What Debian's own slim images leave out (their dpkg path-excludes), so that sizes measured on this image are those
  # of the registry's: debootstrap's downloaded packages, documentation (but the copyright files), manuals, locales.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
    "$root"/usr/share/groff/* "$root"/usr/share/lintian/* "$root"/var/cache/man/*
  find "$root/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete
  "$node_bin" --version | grep -q '^v22\.' || { echo "container-base-image: $node_bin is not Node 22" >&2; rm -rf "$work"; exit 1; }
  install -m 0755 "$node_bin" "$root/usr/local/bin/node"
  # The C headers native addons compile against, where the official image has them (/usr/local/include/node): the
  # build image only. The official tarball's are not on this machine; its own (Debian's nodejs headers, /usr/include/node)
  # are what this machine's npm builds the same addons with (nodedir=/usr).
  if [ -n "$include" ]; then
    [ -d /usr/include/node ] || { echo "container-base-image: no Node headers in /usr/include/node" >&2; rm -rf "$work"; exit 1; }
    mkdir -p "$root/usr/local/include" && cp -r /usr/include/node "$root/usr/local/include/node"
  fi
  # npm, laid out as in the official image (/usr/local/lib/node_modules/npm, npm and npx on PATH).
  (cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
  mkdir -p "$root/usr/local/lib/node_modules/npm"
  tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  tar -C "$root" -c . | podman import --change "LABEL paymaster.base-revision=$BASE_REVISION" --change 'CMD ["node"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$image" >/dev/null
  rm -rf "$work"
  echo "container-base-image: $image made here in $(( $(date +%s) - started )) s" >&2
}

make_image "docker.io/library/node:22-bookworm-slim" ""
make_image "docker.io/library/node:22-bookworm" "python3,make,g++"
