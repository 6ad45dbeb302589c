#!/bin/sh
# Install what building edgellm needs on Debian/Ubuntu: a C compiler, CMake, cJSON (plan
# device files, eval task sets, Hugging Face checkpoints, the server's requests), libmicrohttpd
# (`edgellm serve`'s HTTP), libsodium, libcurl and libzstd (`edgellm store`: signatures and hashes,
# downloads, patches), zstd (the patch size comparison), curl (the server tests) and wrk
# (bench/server_load.sh). Installs only what is missing; uses sudo when not root. Extra package names on the command line are installed too.
set -e
PKGS="build-essential cmake libcjson-dev libmicrohttpd-dev libsodium-dev libcurl4-openssl-dev libzstd-dev zstd curl wrk $*"
missing=""
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq $missing >/dev/null
