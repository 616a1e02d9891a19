# The shell tests' checks, sourced: fail WHAT records a failure and goes
# on; expect_in WHAT TEXT NEEDLE fails unless TEXT contains NEEDLE;
# checks_done NAME exits 1 naming the count if any check failed, else
# prints "NAME: all passed".
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
expect_in() {  # expect_in WHAT TEXT NEEDLE
  [[ $2 == *"$3"* ]] || fail "$1: expected '$3' in: $2"
}
checks_done() {
  if ((failures)); then
    echo "$1: $failures failure(s)" >&2
    exit 1
  fi
  echo "$1: all passed"
}
