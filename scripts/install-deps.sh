#!/usr/bin/env bash
# Installs what building and testing ctrainer needs, and does nothing when it is all there:
#   1. Debian packages (apt): compiler, CMake, Ninja, ccache and the C++ libraries;
#   2. the pinned torch wheel (scripts/requirements.txt) in a Python virtual environment outside
#      the clone, whose libtorch (headers, shared libraries, CMake config) the build links;
#   3. with --tests, the Python references of the tests and benchmarks (requirements-test.txt)
#      in the same environment.
# The environment is keyed by a hash of the pins, so every clone and CI run on this machine
# reuses it, and a changed pin makes a new one. Python is never needed to *run* the binaries.
#
# Usage: scripts/install-deps.sh [--tests] [--print-venv]
#   --tests       also install requirements-test.txt (transformers, tokenizers, ...)
#   --print-venv  print the environment's folder and exit (installs nothing)
# Environment:
#   CTRAINER_VENV    the environment's folder (default: $XDG_CACHE_HOME or ~/.cache, then
#                    ctrainer/venv-<python version>-<hash of requirements.txt>)
#   CTRAINER_PYTHON  the interpreter that creates it (default: python3)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
requirements="$here/requirements.txt"
test_requirements="$here/requirements-test.txt"

with_tests=0
print_venv=0
for arg in "$@"; do
  case "$arg" in
    --tests) with_tests=1 ;;
    --print-venv) print_venv=1 ;;
    *) echo "install-deps: unknown argument '$arg' (use --tests or --print-venv)" >&2; exit 2 ;;
  esac
done

log() { echo "install-deps: $*" >&2; }
die() { echo "install-deps: error: $*" >&2; exit 1; }

python="${CTRAINER_PYTHON:-python3}"
command -v "$python" > /dev/null || die "no '$python' on PATH: install python3 (Debian: apt-get install python3 python3-venv) or set CTRAINER_PYTHON"
py_version="$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
pins_hash() { sha256sum "$1" | cut -c1-12; }
venv="${CTRAINER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ctrainer/venv-py$py_version-$(pins_hash "$requirements")}"
if [ "$print_venv" -eq 1 ]; then
  echo "$venv"
  exit 0
fi

# ---- 1. Debian packages ----------------------------------------------------------------------
packages=(
  cmake ninja-build g++ make ccache pkg-config
  libspdlog-dev libfmt-dev nlohmann-json3-dev libboost-program-options-dev
  libgtest-dev libgmock-dev libutf8proc-dev libonig-dev
  zlib1g-dev                          # CRC-32 of checkpoint files
  libcurl4-openssl-dev                # HTTP client of --report_to mlflow (MLflow's REST API)
  libyaml-cpp-dev                     # accelerate's YAML config files (ctrainer-run --config_file)
  libgloo-dev                         # headers only: c10d's ProcessGroupGloo.hpp includes five
                                      # gloo headers that the torch wheel does not ship (its gloo
                                      # is compiled into libtorch_cpu; we never link Debian's)
  iproute2                            # `ip netns` / veth: the multi-node tests simulate two
                                      # nodes in network namespaces (skipped without it)
  clang libclang-rt-14-dev llvm       # `make fuzz` (scripts/fuzz.sh): libFuzzer and the
                                      # sanitizer runtimes, llvm-symbolizer for their reports
)
"$python" -c 'import ensurepip, venv' 2> /dev/null || packages+=(python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# ---- 2./3. the torch wheel and the Python references -------------------------------------------
mkdir -p "$(dirname "$venv")"
exec 9> "$venv.lock"
flock 9  # two builds on one machine (a clone and CI) must not install into one venv at once

# Installs one pinned list with --no-deps (the list is the whole closure, so pip resolves
# nothing and cannot pick another version), checks the result, then records the pins' hash.
install_pins() {
  local file="$1" stamp="$2" what="$3"
  [ "$(cat "$venv/$stamp" 2> /dev/null)" = "$(pins_hash "$file")" ] && return 0
  log "installing $what into $venv (pins: $file)"
  "$venv/bin/python" -m pip install --quiet --no-deps --progress-bar off --disable-pip-version-check \
      -r "$file" || die "pip could not install $file into $venv (see above). Nothing falls back to another torch: fix the error (network, disk space) and run again"
  "$venv/bin/python" -m pip check --disable-pip-version-check > /dev/null ||
    die "the environment $venv is inconsistent after installing $file: $("$venv/bin/python" -m pip check 2>&1 | head -5)"
  pins_hash "$file" > "$venv/$stamp"
}

if [ ! -x "$venv/bin/python" ]; then
  log "creating the Python environment $venv (torch wheel + its CUDA libraries: ~3 GB to download, ~5.5 GB on disk)"
  "$python" -m venv "$venv" || die "'$python -m venv $venv' failed"
fi
install_pins "$requirements" .ctrainer-torch-pins "the torch wheel"
if [ "$with_tests" -eq 1 ]; then
  install_pins "$test_requirements" .ctrainer-test-pins "the tests' Python references"
fi
