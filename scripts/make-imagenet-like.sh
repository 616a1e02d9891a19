#!/usr/bin/env bash
# Builds an ImageNet-like folder of JPEGs, deterministically from a seed, by
# cropping, resizing and re-encoding the photographs of Debian's
# mate-backgrounds package (bench/ops/make_imagenet_like.cc does the work
# with sluice's own ops: DecodeJpeg, Crop, Resize, EncodeJpeg).
#
# Usage: scripts/make-imagenet-like.sh [--out DIR] [--count 5000] [--classes 10]
#       [--width 500] [--height 375] [--quality 90] [--seed 1] [--threads N]
#       [--build BUILD_DIR]
#
# Layout: DIR/n01000000/n01000000_000000.JPEG ... (one folder per class).
# The same options give the same bytes on every run. DIR defaults to
# /tmp/sluice-imagenet-like; an existing DIR is replaced.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib/args.sh"
args_help "$@"
out=/tmp/sluice-imagenet-like
build=$root/build
args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --out|--build|--count|--classes|--width|--height|--quality|--seed|--threads)
      [[ $# -ge 2 ]] || args_die "$1 needs a value" ;;
    *) args_die "unknown option $1" ;;
  esac
  case $1 in
    --out) out=$2 ;;
    --build) build=$2 ;;
    *) args+=("$1" "$2") ;;
  esac
  shift 2
done

src=/usr/share/backgrounds/mate
if [[ ! -d $src ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "make-imagenet-like: installing mate-backgrounds (the source photographs)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mate-backgrounds >/dev/null
  else
    echo "make-imagenet-like: $src is missing: apt-get install mate-backgrounds" >&2
    exit 1
  fi
fi

helper=$build/bench/ops/make_imagenet_like
if [[ ! -x $helper ]]; then
  [[ -f $build/build.ninja || -f $build/Makefile ]] || {
    echo "make-imagenet-like: no build in $build (run make build, or pass --build DIR)" >&2; exit 1; }
  cmake --build "$build" --target make_imagenet_like >&2
fi

rm -rf "$out"
start=$(date +%s.%N)
"$helper" --out "$out" --source "$src" "${args[@]}"
end=$(date +%s.%N)
echo "make-imagenet-like: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s in all"
