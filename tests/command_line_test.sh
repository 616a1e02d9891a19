#!/usr/bin/env bash
# Every program a user runs by name (the samples, the bench programs with
# flags of their own, the scripts) follows the command-line conventions of
# docs/architecture.md:
#   PROGRAM --help             exit 0, the usage ("usage", any case) on stdout
#   PROGRAM --no-such-flag     exit 2, stderr names the flag and holds the
#                              usage, nothing on stdout
# and neither run writes a file: each runs in an empty folder, with HOME an
# empty folder too, and both must stay empty.
#
# Usage: tests/command_line_test.sh PROGRAM...
set -uo pipefail
(($# > 0)) || { echo "usage: tests/command_line_test.sh PROGRAM..." >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# run PROGRAM ARG: runs it in a fresh empty folder; sets rc, out, err and
# written (what appeared in the folder or in HOME).
run() {
  local work=$tmp/work home=$tmp/home
  rm -rf "$work" "$home" && mkdir -p "$work" "$home"
  rc=0
  local cmd=("$1")
  [[ $1 != *.sh ]] || cmd=(bash "$1")  # a script need not be executable (gpu-run.sh)
  (cd "$work" && HOME=$home timeout 60 "${cmd[@]}" "$2" > "$tmp/out" 2> "$tmp/err") || rc=$?
  out=$(cat "$tmp/out")
  err=$(cat "$tmp/err")
  written=$(cd "$tmp" && find work home -mindepth 1 | head -5 | tr '\n' ' ')
}

for program in "$@"; do
  name=$(basename "$program")
  [[ -f $program && ($program == *.sh || -x $program) ]] ||
    { fail "$name: $program is not an executable file"; continue; }
  program=$(cd "$(dirname "$program")" && pwd)/$name  # it runs in another folder

  run "$program" --help
  [[ $rc == 0 ]] || fail "$name --help: exit status $rc, not 0 (stderr: ${err:0:300})"
  [[ ${out,,} == *usage* ]] || fail "$name --help: no usage on stdout: ${out:0:300}"
  [[ -z $written ]] || fail "$name --help wrote files: $written"

  run "$program" --no-such-flag
  [[ $rc == 2 ]] || fail "$name --no-such-flag: exit status $rc, not 2 (stderr: ${err:0:300})"
  [[ $err == *--no-such-flag* ]] || fail "$name --no-such-flag: stderr does not name the flag: ${err:0:300}"
  [[ ${err,,} == *usage* ]] || fail "$name --no-such-flag: no usage on stderr: ${err:0:300}"
  [[ -z $out ]] || fail "$name --no-such-flag: wrote to stdout: ${out:0:300}"
  [[ -z $written ]] || fail "$name --no-such-flag wrote files: $written"
done

if ((failures > 0)); then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "OK: $# programs answer --help and refuse an unknown flag"
