#!/usr/bin/env bash
# Debian's podman and the helpers the container image tests use with it (rootful podman, base images made with
# debootstrap): installed with apt-get as root when missing (scripts/ensure-debian-packages.sh, its exit codes).
set -uo pipefail
exec bash "$(dirname "$0")/../../../scripts/ensure-debian-packages.sh" /usr/bin/podman "the container image tests" \
  podman buildah debootstrap uidmap fuse-overlayfs slirp4netns runc containernetworking-plugins catatonit golang-github-containers-common
