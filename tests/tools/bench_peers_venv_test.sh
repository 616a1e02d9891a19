#!/usr/bin/env bash
# scripts/bench-peers.sh's venv handling (--check-venvs, --setup-venvs)
# without network or PyPI: PYTHON3 is a fake that makes fake venvs whose
# pip only records what it was asked to install.
#
#   tests/tools/bench_peers_venv_test.sh [SOURCE_DIR]
set -euo pipefail
src=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
script=$src/scripts/bench-peers.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.sh"

# The fake Python: `-c CODE` succeeds unless FAKE_NO_VENV is set (no
# ensurepip); `-m venv DIR` makes DIR with pyvenv.cfg, a bin/python that
# imports anything once pip has run, and a bin/pip that logs its arguments
# (unless FAKE_NO_PIP: a venv made without pip, as without python3-venv).
mkdir -p "$tmp/bin"
cat > "$tmp/bin/fake-python3" << 'EOF'
#!/usr/bin/env bash
case $1 in
  -c) [[ -z ${FAKE_NO_VENV:-} ]] ;;
  -m)
    [[ $2 == venv ]] || exit 1
    dir=$3
    mkdir -p "$dir/bin"
    echo "home = /fake" > "$dir/pyvenv.cfg"
    printf '#!/bin/sh\n[ -f "%s/installed" ]\n' "$dir" > "$dir/bin/python"
    chmod +x "$dir/bin/python"
    if [[ -n ${FAKE_NO_PIP:-} ]]; then echo "Error: ensurepip is not available" >&2; exit 1; fi
    printf '#!/bin/sh\necho "$@" >> "%s/pip.log"\ntouch "%s/installed"\n' "$dir" "$dir" > "$dir/bin/pip"
    chmod +x "$dir/bin/pip" ;;
  *) exit 1 ;;
esac
EOF
chmod +x "$tmp/bin/fake-python3"
export PYTHON3=$tmp/bin/fake-python3 TF_VENV=$tmp/tf-venv TORCH_VENV=$tmp/torch-venv
export DALI_VENV=$tmp/dali-venv SPDL_VENV=$tmp/spdl-venv GRAIN_VENV=$tmp/grain-venv
# SPDL is left out of the runs that set venvs up: it may apt-get FFmpeg.
export PEERS="tf torch dali grain"

run() {  # run ARGS...: sets out (stdout+stderr) and rc
  rc=0
  out=$("$script" "$@" 2>&1) || rc=$?
}

# 1. Nothing there: check reports missing, exit 1, makes nothing.
run --check-venvs
[[ $rc == 1 ]] || fail "check with no venvs: exit $rc"
expect_in "check missing" "$out" "tf-venv $TF_VENV: missing; a run makes it from PyPI"
expect_in "check missing" "$out" "torch-venv $TORCH_VENV: missing"
[[ ! -e $TF_VENV ]] || fail "check made $TF_VENV"

# 2. Setup makes both with the fake pip; check then says ready.
run --setup-venvs
[[ $rc == 0 ]] || fail "setup: exit $rc: $out"
expect_in "tf pip" "$(cat "$TF_VENV/pip.log" 2>/dev/null)" "install -q tensorflow-cpu"
expect_in "torch pip" "$(cat "$TORCH_VENV/pip.log" 2>/dev/null)" \
  "install -q torch==2.15.0 torchvision==0.29.2 webdataset==1.0.2"
expect_in "dali pip" "$(cat "$DALI_VENV/pip.log" 2>/dev/null)" "install -q nvidia-dali-cuda120==2.4.0"
expect_in "grain pip" "$(cat "$GRAIN_VENV/pip.log" 2>/dev/null)" "install -q grain==0.2.18 pillow"
run --check-venvs
[[ $rc == 0 ]] || fail "check after setup: exit $rc: $out"
expect_in "check ready" "$out" "tf-venv $TF_VENV: ready"
expect_in "check ready" "$out" "dali-venv $DALI_VENV: ready"
PEERS="spdl" run --check-venvs
expect_in "check spdl" "$out" "spdl-venv $SPDL_VENV: missing; a run makes it from PyPI"
expect_in "check spdl" "$out" "tf-venv $TF_VENV: skipped (not in PEERS)"

# 3. Half-made venvs, as interrupted runs leave them: detected, then rebuilt.
rm "$TF_VENV/installed"                 # pip interrupted: the import fails
rm -rf "${TORCH_VENV:?}/bin"           # python3 -m venv interrupted
run --check-venvs
[[ $rc == 1 ]] || fail "check half-made: exit $rc"
expect_in "check half tf" "$out" "tf-venv $TF_VENV: incomplete: import tensorflow fails; a run removes it"
expect_in "check half torch" "$out" "torch-venv $TORCH_VENV: incomplete: no working bin/python"
echo stale > "$TF_VENV/stale-file"
run --setup-venvs
[[ $rc == 0 ]] || fail "setup of half-made venvs: exit $rc: $out"
expect_in "rebuild log" "$out" "$TF_VENV is incomplete (import tensorflow fails)"
[[ ! -e $TF_VENV/stale-file ]] || fail "the half-made $TF_VENV was not removed"
[[ -f $TF_VENV/installed && -f $TORCH_VENV/installed ]] || fail "venvs not rebuilt"

# 4. A directory that is not a venv is left alone.
rm -rf "$TF_VENV"; mkdir -p "$TF_VENV"; echo mine > "$TF_VENV/notes.txt"
run --check-venvs
expect_in "foreign check" "$out" "no pyvenv.cfg; left alone"
run --setup-venvs
[[ $rc == 1 ]] || fail "setup with a foreign TF_VENV: exit $rc"
[[ -f $TF_VENV/notes.txt ]] || fail "a directory that is not a venv was removed"
expect_in "foreign setup" "$out" "is not a Python venv (no pyvenv.cfg): left alone"

# 5. No python3-venv: a clear message, and no half-made venv left behind.
rm -rf "$TF_VENV" "$TORCH_VENV" "$DALI_VENV" "$GRAIN_VENV"
FAKE_NO_VENV=1 run --check-venvs
expect_in "no venv check" "$out" "install python3-venv"
FAKE_NO_VENV=1 run --setup-venvs
[[ $rc == 1 ]] || fail "setup without python3-venv: exit $rc"
expect_in "no venv setup" "$out" "apt-get install python3-venv"
FAKE_NO_PIP=1 run --setup-venvs
[[ $rc == 1 ]] || fail "setup where venv has no pip: exit $rc"
expect_in "no pip setup" "$out" "-m venv $TF_VENV failed (on Debian/Ubuntu: apt-get install python3-venv)"
[[ ! -e $TF_VENV ]] || fail "a venv without pip was left at $TF_VENV"
[[ ! -e $TORCH_VENV.failed ]] || fail "a missing python3-venv was remembered as a failed torch install"

# 6. TORCH=skip and a remembered failed torch install.
TORCH=skip run --check-venvs
expect_in "torch skip" "$out" "torch-venv $TORCH_VENV: skipped (not in PEERS)"
date > "$TORCH_VENV.failed"
run --check-venvs
expect_in "torch failed" "$out" "an earlier install failed"

checks_done bench_peers_venv_test
