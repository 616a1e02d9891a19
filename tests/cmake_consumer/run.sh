#!/usr/bin/env bash
# Installs the build in BUILD_DIR to a scratch prefix, then builds a separate
# project against it twice: with find_package(sluice) and with pkg-config.
#   tests/cmake_consumer/run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
cmake -S "$src/tests/cmake_consumer" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_COMPILER_LAUNCHER="$(command -v ccache || true)" > "$work/configure.log" \
  || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/build/consumer" "$work/a.tfrecord"
"$work/build/dist_consumer"
if [[ -x "$work/build/gpu_consumer" ]]; then "$work/build/gpu_consumer"; fi
libdir=$(find "$work/prefix" -name sluice.pc -printf '%h\n' | head -1)
flags=$(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs --static sluice)
${CXX:-c++} "$src/tests/cmake_consumer/main.cc" -o "$work/consumer-pc" $flags
"$work/consumer-pc" "$work/b.tfrecord"
