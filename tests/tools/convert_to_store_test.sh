#!/usr/bin/env bash
# `sluice convert --out s3://...` and the CLI on a store: run by
# tests/with_s3_server.sh against moto on loopback (bucket "convert").
#   convert images -> shards and .idx as objects; count / verify / cat them
#   by a glob URI; --resume keeps every complete shard; the manifest is an
#   object; a missing bucket is an error naming it.
#
# Usage: tests/tools/convert_to_store_test.sh SLUICE IMAGE_FOLDER_PIPELINE WORK
set -uo pipefail
(($# == 3)) || { echo "usage: $0 SLUICE IMAGE_FOLDER_PIPELINE WORK" >&2; exit 2; }
sluice=$1 pipeline=$2 work=$3
. "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.sh"
rm -rf "$work" && mkdir -p "$work"
"$pipeline" --make-demo "$work/photos" > /dev/null || { echo "FAIL: --make-demo" >&2; exit 1; }

out=$("$sluice" convert images "$work/photos" --out s3://convert/train --shards 3 --index 2>&1) ||
  fail "convert to s3 failed: $out"
out=$("$sluice" count 's3://convert/train-*.tfrecord' 2>&1) || fail "count failed: $out"
expect_in count "$out" "24"
out=$("$sluice" count 's3://convert/train-0000{0,2}-of-00003.tfrecord' 2>&1) ||
  fail "count with braces failed: $out"
expect_in "count with braces" "$out" "train-00002-of-00003.tfrecord"
[[ $out != *"train-00001-of-00003"* ]] || fail "count with braces read shard 1: $out"
out=$("$sluice" verify 's3://convert/train-*.tfrecord' 2>&1) || fail "verify failed: $out"
out=$("$sluice" cat 's3://convert/train-00000-of-00003.tfrecord' --limit 1 2>&1) ||
  fail "cat failed: $out"
out=$("$sluice" convert images "$work/photos" --out s3://convert/train --shards 3 --index --resume 2>&1) ||
  fail "resume failed: $out"
expect_in resume "$out" "resumed: 3 of 3 shards were complete already"
out=$("$sluice" convert images "$work/photos" --out s3://no-such-bucket/train --shards 1 2>&1) &&
  fail "a missing bucket converted: $out"
expect_in "missing bucket" "$out" "no-such-bucket"
checks_done convert_to_store_test
