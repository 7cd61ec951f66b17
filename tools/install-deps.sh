#!/usr/bin/env bash
# Installs the Debian packages ingot's build and tests need, if any is missing.
# Idempotent: does nothing (and needs no root) when everything is there.
set -euo pipefail
pkgs=(clang-22 lld-22 llvm-22 libjansson-dev libssl-dev libamdhip64-5 cmake ninja-build
      python3-jinja2 python3-yaml python3-jsonschema libclang-rt-22-dev valgrind pkgconf)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "ingot: installing missing packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "ingot: not root; run as root: apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
