#!/usr/bin/env bash
# Installs the Debian packages ctrainer needs. Idempotent: a no-op when everything is present.
set -euo pipefail
packages=(
  cmake ninja-build g++ make ccache pkg-config
  libtorch-dev libgloo-dev            # libtorch 1.13 (CPU) and c10d/Gloo headers
  libopenblas0-openmp                 # fast BLAS for libtorch's GEMMs (OpenMP build, see README)
  libspdlog-dev libfmt-dev nlohmann-json3-dev libboost-program-options-dev
  libgtest-dev libgmock-dev libutf8proc-dev
  zlib1g-dev                          # CRC-32 of checkpoint files
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
