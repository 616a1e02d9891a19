#!/usr/bin/env bash
# The relocatable Open MPI of scripts/pack-openmpi.sh (what the GPU bundle
# carries to a machine without Open MPI) runs `mpirun -np 2` from a copy in
# another folder while the system's Open MPI is hidden: in a private mount
# namespace, empty folders cover /usr/lib/x86_64-linux-gnu/openmpi, pmix2,
# hwloc, /usr/share/openmpi and /etc/openmpi, and /dev/null covers the
# system's mpirun/orterun/orted and every library the copy carries, so
# nothing of the system's Open MPI can be found. Without env.sh the same
# copy must fail there (the hiding works); with it, both ranks say OK.
#   tests/distribute/openmpi_reloc_test.sh SOURCE_DIR WORKER
# Exits 77 (CTest: skipped) without Open MPI 4 or without root (unshare -m).
set -uo pipefail
src=$1 worker=$2
command -v orterun > /dev/null || { echo "SKIP: no Open MPI (orterun) to pack"; exit 77; }
unshare -m true 2> /dev/null || { echo "SKIP: unshare -m needs root"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$src/scripts/pack-openmpi.sh" "$tmp/packed" > /dev/null || fail "pack-openmpi.sh"
cp -a "$tmp/packed" "$tmp/ompi-reloc" && rm -rf "$tmp/packed"  # a folder it was not made in
mkdir "$tmp/applib" "$tmp/empty"
ldd "$worker" | awk '/=> \//{print $3}' |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s)\.so' |
  while read -r lib; do cp -L "$lib" "$tmp/applib/"; done
cat > "$tmp/hidden.sh" << EOF
# Runs "\$@" with the system's Open MPI hidden (inside unshare -m).
set -e
A=/usr/lib/x86_64-linux-gnu
for d in \$A/openmpi \$A/pmix2 \$A/hwloc /usr/share/openmpi /etc/openmpi; do
  [ -d "\$d" ] && mount --bind "$tmp/empty" "\$d"
done
for f in /usr/bin/mpirun /usr/bin/mpiexec /usr/bin/orterun /usr/bin/orted; do
  [ -e "\$f" ] && mount --bind /dev/null "\$(readlink -f "\$f")"
done
for n in \$(ls "$tmp/ompi-reloc/lib" "$tmp/applib"); do
  [ -f "\$A/\$n" ] && mount --bind /dev/null "\$(readlink -f "\$A/\$n")"
done
set +e
"\$@"
EOF
run_hidden() { timeout 120 unshare -m bash "$tmp/hidden.sh" "$@"; }
# Without env.sh: only PATH and LD_LIBRARY_PATH, which must not be enough.
run_hidden env PATH="$tmp/ompi-reloc/bin:$PATH" LD_LIBRARY_PATH="$tmp/ompi-reloc/lib:$tmp/applib" \
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  mpirun -np 2 "$worker" collectives > "$tmp/out" 2>&1 &&
  { cat "$tmp/out"; fail "mpirun ran without env.sh: the system's Open MPI was not hidden"; }
# The system's library is unusable there (proves the /dev/null cover).
run_hidden bash -c "LD_LIBRARY_PATH= '$worker' --help" > /dev/null 2>&1 &&
  fail "the worker found a system libmpi inside the namespace"
# With env.sh: two ranks under the relocated mpirun.
run_hidden bash -c ". '$tmp/ompi-reloc/env.sh' && export LD_LIBRARY_PATH=\$LD_LIBRARY_PATH:$tmp/applib &&
  mpirun --version | head -1 && mpirun -np 2 '$worker' collectives" > "$tmp/out" 2>&1 ||
  { cat "$tmp/out"; fail "mpirun -np 2 from the relocated copy"; }
[[ $(grep -c ': OK collectives' "$tmp/out") == 2 ]] || { cat "$tmp/out"; fail "not both ranks said OK"; }
cat "$tmp/out"
echo "PASS: the relocated Open MPI ran 2 ranks with the system's hidden"
