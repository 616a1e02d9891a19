#!/usr/bin/env bash
# Installs the Debian packages sluice needs to build, test and fuzz.
#
# Used by `make demo`, `make test` and .ci/run. It asks dpkg first and only
# calls apt-get for what is missing, so on a warm machine it costs a few
# milliseconds. Run as root or with sudo available.
#
# Usage: scripts/install-deps.sh          # build + test dependencies
#        scripts/install-deps.sh --check  # list what is missing, install nothing
set -euo pipefail
. "$(dirname "$0")/lib/args.sh"
args_help "$@"
case "${1:-}" in "" | --check) ;; *) args_die "unknown option $1" ;; esac
(($# <= 1)) || args_die "one option at most, got: $*"

PACKAGES=(
  # toolchain
  g++ cmake ninja-build ccache pkg-config make
  # libraries (docs/architecture.md: Debian packages only, found with CMake)
  zlib1g-dev libprotobuf-dev protobuf-compiler
  libcli11-dev libfmt-dev nlohmann-json3-dev
  libdlpack-dev
  libtbb-dev
  libturbojpeg0-dev libjpeg62-turbo-dev libspng-dev
  # nn's CPU backend: oneDNN (OpenMP runtime, libgomp comes with g++). Its
  # CMake config calls find_package(OpenCL): only recommended by libdnnl-dev,
  # so named here (it pulls in opencl-c-headers).
  libdnnl-dev ocl-icd-opencl-dev
  # distribute/: MPI communicator and the multi-process tests under mpirun
  libopenmpi-dev openmpi-bin
  # make demo and the training samples: Fashion-MNIST's IDX files
  dataset-fashion-mnist
  # the Python package (python/): headers, and venv for scripts/python-env.sh
  python3-dev python3-venv
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # fuzzing and sanitizers (clang's libFuzzer + runtimes)
  clang libclang-rt-14-dev llvm
)

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if [[ "${1:-}" == "--check" ]]; then
  printf 'missing: %s\n' "${missing[*]}"
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done" >&2
