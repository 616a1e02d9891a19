#!/usr/bin/env bash
# Copies this machine's Open MPI launcher (Debian 12's Open MPI 4.1 and its
# external PMIx 4.2) into DEST as a folder that runs from anywhere, for a
# machine with no Open MPI installed (the lent GPU machine):
#   DEST/bin/mpirun, orted       orterun and orted (mpirun is orterun)
#   DEST/lib/                    libopen-rte, libopen-pal, libpmix, hwloc,
#                                libevent... (what the launcher and the
#                                plugins load, glibc's excepted)
#   DEST/lib/openmpi3/           the MCA plugins, less those that need
#                                UCX, libfabric, PSM or verbs (the default
#                                config excludes them anyway)
#   DEST/lib/pmix/, share/pmix/  PMIx's plugins and help files
#   DEST/share/openmpi/          help-*.txt, amca-param-sets
#   DEST/etc/                    openmpi-mca-params.conf, pmix-mca-params.conf
#   DEST/env.sh                  `. DEST/env.sh` sets the environment below
#
# How it relocates (Open MPI 4.1 reads its install paths from the
# environment first, opal/mca/installdirs/env; PMIx likewise): env.sh sets
#   OPAL_PREFIX, OPAL_EXEC_PREFIX, OPAL_BINDIR, OPAL_LIBDIR, OPAL_PKGLIBDIR
#   (plugins), OPAL_DATAROOTDIR, OPAL_DATADIR, OPAL_PKGDATADIR (help files),
#   OPAL_SYSCONFDIR (openmpi-mca-params.conf) to the folder, PMIX_PREFIX,
#   PMIX_LIBDIR, PMIX_PKGLIBDIR, PMIX_DATADIR, PMIX_PKGDATADIR,
#   PMIX_SYSCONFDIR likewise, PATH and LD_LIBRARY_PATH to its bin and lib,
#   and for one host:
#   OMPI_MCA_plm=isolated             no ssh/rsh agent needed (one host)
#   OMPI_MCA_pml=ob1, OMPI_MCA_btl=self,vader   shared memory, no network
#   OMPI_MCA_btl_vader_single_copy_mechanism=none  no CMA (process_vm_readv
#                                     is often blocked in containers)
#   OMPI_MCA_btl_vader_backing_directory=/tmp  /dev/shm may be tiny there
#   OMPI_MCA_orte_tmpdir_base=/tmp, OMPI_MCA_rmaps_base_oversubscribe=1
#   OMPI_ALLOW_RUN_AS_ROOT=1, OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 (it runs as root)
# The OMPI_MCA_* values above are defaults: one set before env.sh wins.
# Proven with tests/distribute/openmpi_reloc_test.sh: mpirun -np 2 from a
# copy of DEST, with the system's Open MPI and PMIx hidden.
#
# Usage: scripts/pack-openmpi.sh DEST
set -euo pipefail
. "$(dirname "$0")/lib/args.sh"
args_help "$@"
args_positional 1 "$@"
(($# == 1)) || args_die "give DEST"
DEST=$1
ARCH=/usr/lib/x86_64-linux-gnu
OMPI=$ARCH/openmpi/lib
PMIX=$ARCH/pmix2
command -v orterun > /dev/null && [ -d "$OMPI/openmpi3" ] ||
  { echo "pack-openmpi: no Open MPI 4 here (orterun, $OMPI/openmpi3)" >&2; exit 1; }
rm -rf "$DEST"
mkdir -p "$DEST"/{bin,lib/openmpi3,lib/pmix,share/openmpi,share/pmix,etc}
cp -L "$(command -v orterun)" "$DEST/bin/mpirun"
cp -L "$(command -v orted)" "$DEST/bin/orted"
# Plugins whose libraries are not wanted on one host (and OpenSHMEM's) are
# left out, so that Open MPI never tries to open them.
skip='lib(ucp|uct|ucs|ucm|fabric|psm_infinipath|psm2|ibverbs|rdmacm|oshmem)\.so'
for p in "$OMPI"/openmpi3/*.so; do
  deps=$(ldd "$p")
  grep -Eq "$skip" <<< "$deps" || cp -L "$p" "$DEST/lib/openmpi3/"
done
[ -d "$PMIX/lib/pmix" ] && cp -L "$PMIX"/lib/pmix/*.so "$DEST/lib/pmix/"
cp -L "$PMIX"/lib/libpmix.so.2 "$DEST/lib/"
ldd "$DEST"/bin/* "$DEST"/lib/openmpi3/*.so "$DEST"/lib/pmix/*.so "$DEST"/lib/libpmix.so.2 |
  awk '/=> \//{print $3}' | sort -u |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s)\.so' |
  while read -r lib; do cp -nL "$lib" "$DEST/lib/"; done
cp -r /usr/share/openmpi/help-*.txt /usr/share/openmpi/amca-param-sets "$DEST/share/openmpi/"
[ -d "$PMIX/share/pmix" ] && cp "$PMIX"/share/pmix/help-*.txt "$DEST/share/pmix/"
# The system's config, less its plugin paths (they would point at /usr).
grep -v '^mca_base_component_path' /etc/openmpi/openmpi-mca-params.conf \
  > "$DEST/etc/openmpi-mca-params.conf"
grep -v '^mca_base_component_path' "$PMIX/share/pmix-mca-params.conf" \
  > "$DEST/etc/pmix-mca-params.conf" 2>/dev/null || true
cat > "$DEST/env.sh" <<'ENV'
# Sourced: makes the relocated Open MPI beside this file the one in use
# (scripts/pack-openmpi.sh explains each variable). An OMPI_MCA_* set before wins.
M=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OPAL_PREFIX=$M OPAL_EXEC_PREFIX=$M OPAL_BINDIR=$M/bin OPAL_LIBDIR=$M/lib
export OPAL_PKGLIBDIR=$M/lib/openmpi3 OPAL_DATAROOTDIR=$M/share OPAL_DATADIR=$M/share
export OPAL_PKGDATADIR=$M/share/openmpi OPAL_SYSCONFDIR=$M/etc
export PMIX_PREFIX=$M PMIX_LIBDIR=$M/lib PMIX_PKGLIBDIR=$M/lib/pmix PMIX_DATADIR=$M/share
export PMIX_PKGDATADIR=$M/share/pmix PMIX_SYSCONFDIR=$M/etc PMIX_MCA_mca_base_component_path=$M/lib/pmix
export PATH=$M/bin:$PATH LD_LIBRARY_PATH=$M/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_MCA_plm=${OMPI_MCA_plm:-isolated} OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
export OMPI_MCA_btl_vader_backing_directory=${OMPI_MCA_btl_vader_backing_directory:-/tmp}
export OMPI_MCA_orte_tmpdir_base=${OMPI_MCA_orte_tmpdir_base:-/tmp}
export OMPI_MCA_rmaps_base_oversubscribe=${OMPI_MCA_rmaps_base_oversubscribe:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset M
ENV
du -sh "$DEST" | sed 's/^/pack-openmpi: /'
