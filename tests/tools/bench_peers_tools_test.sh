#!/usr/bin/env bash
# The peers harness's own tools, without any peer installed:
# bench/peers/make_wds.py (case 8's shards: deterministic bytes, members
# KEY.jpg + KEY.cls, readable by `sluice count`), sluice_cases' cases 7
# (folder) and 8 (wds) on a tiny folder, peers_table.py's table and
# verdicts from a results file, and plot-bench.py --peers.
#
#   tests/tools/bench_peers_tools_test.sh SOURCE_DIR SLUICE_BINARY [SLUICE_CASES_BINARY]
set -euo pipefail
src=$1 sluice=$2 cases=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.sh"

# A folder of 5 JPEGs in 2 classes.
mkdir -p "$tmp/img/cats" "$tmp/img/dogs"
codec=$src/tests/data/ops/codec
cp "$codec/rgb420_q90.jpg" "$tmp/img/cats/c1.jpg"
cp "$codec/rgb411.jpg" "$tmp/img/cats/c2.jpg"
cp "$codec/rgb440.jpg" "$tmp/img/cats/c3.jpg"
cp "$codec/rgb420_prog.jpg" "$tmp/img/dogs/d1.jpg"
cp "$codec/rgb420_q90.jpg" "$tmp/img/dogs/d2.jpg"

# 1. make_wds.py: 2 shards, round-robin, the same bytes twice.
mkdir -p "$tmp/a"
python3 "$src/bench/peers/make_wds.py" --images "$tmp/img" --out "$tmp/a/train" --shards 2 > /dev/null
mkdir -p "$tmp/b"
python3 "$src/bench/peers/make_wds.py" --images "$tmp/img" --out "$tmp/b/train" --shards 2 > /dev/null
cmp -s "$tmp/a/train-000000.tar" "$tmp/b/train-000000.tar" || fail "make_wds.py: bytes differ"
members=$(tar tf "$tmp/a/train-000000.tar" | tr '\n' ' ')
[[ $members == "c1.jpg c1.cls c3.jpg c3.cls d2.jpg d2.cls " ]] ||
  fail "make_wds.py: shard 0 holds: $members"
[[ $(tar xOf "$tmp/a/train-000000.tar" d2.cls) == 1 ]] || fail "make_wds.py: d2's class is not 1"
cmp -s <(tar xOf "$tmp/a/train-000001.tar" c2.jpg) "$codec/rgb411.jpg" ||
  fail "make_wds.py: c2.jpg is not the file's bytes"
[[ ! -e $tmp/a/train-000000.tar.tmp ]] || fail "make_wds.py left a .tmp file"
n=$("$sluice" count "$tmp/a/train-000000.tar" "$tmp/a/train-000001.tar" | tail -1)
expect_in "sluice count of the shards" "$n" "5"
out=$(python3 "$src/bench/peers/make_wds.py" --images "$tmp/a" --out "$tmp/c" 2>&1) && fail "no classes: exit 0"
expect_in "no classes" "$out" "no class folders"

# 2. sluice_cases' cases 7 and 8 on them (skipped where bench/ is not built).
if [[ -n $cases ]]; then
  for spec in "folder:$tmp/img" "wds:$tmp/a/train-*.tar"; do
    line=$("$cases" --case "${spec%%:*}" --files "${spec#*:}" --cores 1 --seconds 0.3 \
             --warmup 0 --batch 2 | tail -1)
    expect_in "sluice_cases ${spec%%:*}" "$line" "\"case\":\"${spec%%:*}\""
    [[ $line =~ \"items\":([0-9]+) && ${BASH_REMATCH[1]} -ge 2 ]] ||
      fail "sluice_cases ${spec%%:*}: no images: $line"
  done
fi

# 3. peers_table.py: medians, ratios, verdicts, the markers replaced.
cat > "$tmp/results.jsonl" << 'JSON'
{"system":"sluice","case":"folder","items_per_s":3000,"case_no":7}
{"system":"sluice","case":"folder","items_per_s":3200,"case_no":7}
{"system":"sluice","case":"folder","items_per_s":2800,"case_no":7}
{"system":"dali","case":"folder","items_per_s":1000,"case_no":7}
{"system":"grain","case":"folder","items_per_s":600,"case_no":7}
{"system":"sluice","case":"wds","items_per_s":1000,"case_no":8}
{"system":"webdataset","case":"wds","items_per_s":1250,"case_no":8}
{"system":"sluice-python","case":"wds","items_per_s":950,"case_no":8}
JSON
printf '# perf\n\n<!-- peers:begin -->\nOLD-SECTION-BODY\n<!-- peers:end -->\n\ntail\n' > "$tmp/perf.md"
RESULTS=$tmp/results.jsonl ROUNDS=3 DURATION=1 WARMUP=1 CORES=2 PERF_MD=$tmp/perf.md \
  n_images=5 RECORDS=0 META_CPU=cpu META_DATE=today META_VERSIONS=v META_COMMAND=cmd \
  META_PEER_NOTES="spdl skipped: test" python3 "$src/bench/peers/peers_table.py" > /dev/null
doc=$(cat "$tmp/perf.md")
expect_in "table header" "$doc" "| # | case | unit | sluice | sluice-python | DALI | Grain | webdataset | bare limit |"
expect_in "case 7 row" "$doc" "| 7 | image folder"
expect_in "case 7 median and ratio" "$doc" "| 3,000 | — | 1,000 (3.00x) | 600 (5.00x) | — |"
expect_in "case 7 verdict" "$doc" "**met** (closest: DALI 3.00x)"
expect_in "case 8 verdict" "$doc" "**missed**: webdataset 0.80x"
expect_in "case 8 python" "$doc" "950 (0.95 of C++)"
expect_in "skipped peers" "$doc" "Peers not measured: spdl skipped: test."
[[ $doc != *OLD-SECTION-BODY* && $doc == *tail* ]] || fail "the section was not replaced in place: $doc"

# 4. plot-bench.py --peers: an SVG with each system's bar.
python3 "$src/scripts/plot-bench.py" --peers "$tmp/results.jsonl" --out "$tmp/peers.svg" > /dev/null
svg=$(cat "$tmp/peers.svg")
expect_in "plot" "$svg" "DALI (CPU)"
expect_in "plot" "$svg" "(sluice 3.00x)"
expect_in "plot" "$svg" "8: WebDataset tars"
out=$(python3 "$src/scripts/plot-bench.py" --peers "$tmp/perf.md" --out "$tmp/x.svg" 2>&1) &&
  fail "plot of a non-JSON file: exit 0"
expect_in "plot error" "$out" "plot-bench:"

checks_done bench_peers_tools_test
