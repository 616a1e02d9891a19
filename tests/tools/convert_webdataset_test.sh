#!/usr/bin/env bash
# `sluice convert webdataset` and `sluice convert tfrecord --to webdataset`:
# the golden shards (tests/data/tar, made by Python's tarfile) go to
# TFRecords and back, and the sha256 of every member (by key and
# lower-cased extension, as webdataset groups them) must be unchanged; a
# brace pattern selects the inputs; nothing temporary is left.
#
# Usage: convert_webdataset_test.sh SLUICE_BINARY DATA_DIR
# Needs python3 (its tarfile and hashlib read the shards).
set -euo pipefail
export LC_ALL=C
SLUICE=${1:?usage: convert_webdataset_test.sh SLUICE_BINARY DATA_DIR}
DATA=${2:?usage: convert_webdataset_test.sh SLUICE_BINARY DATA_DIR}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

mkdir -p "$W/in"
cp "$DATA"/ustar.tar "$DATA"/gnu.tar "$DATA"/pax.tar.gz "$W/in/"
"$SLUICE" convert webdataset "$W/in/{ustar,gnu}.tar" "$W/in/pax.tar.gz" --out "$W/tf/train" --index
ls "$W/tf" > "$W/tf.list"
grep -qx 'train-00000-of-00003.tfrecord' "$W/tf.list"
grep -qx 'train-00002-of-00003.tfrecord.idx' "$W/tf.list"
"$SLUICE" convert tfrecord "$W/tf/train-*.tfrecord" --to webdataset --out "$W/back/shard"
if ls -A "$W/tf" "$W/back" | grep -q '^\.'; then echo "temporary files left"; exit 1; fi

python3 - "$W/in" "$W/back" <<'PY'
import hashlib, os, re, sys, tarfile

def members(paths):
    out = {}
    for p in sorted(paths):
        with tarfile.open(p) as tf:
            for m in tf:
                if not m.isreg() or re.match(r"__[^/]*__($|/)", m.name):
                    continue
                k = re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", m.name)
                key = (k.group(1), k.group(2).lower())
                out[key] = hashlib.sha256(tf.extractfile(m).read()).hexdigest()
    return out

src, back = sys.argv[1], sys.argv[2]
a = members(os.path.join(src, f) for f in os.listdir(src))
b = members(os.path.join(back, f) for f in os.listdir(back))
assert len(a) > 30, len(a)
missing = set(a) ^ set(b)
assert not missing, sorted(missing)[:5]
bad = [k for k in a if a[k] != b[k]]
assert not bad, bad[:5]
print(f"{len(a)} members, sha256 equal after the round trip")
PY
