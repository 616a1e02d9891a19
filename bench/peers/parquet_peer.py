"""sluice.ParquetDataset vs pyarrow.parquet reading the same columns of the same file into
NumPy, in one run (scripts/bench-parquet.sh runs it; docs/perf.md, "Parquet").

Makes FILE if missing: ROWS rows of an int64, a float32, a float64, a fixed-size list of
4 float32 and a short string column, row groups of 131072 rows, snappy (~100 MB).
Prints rows/s of each reader (best of REPEATS, the file in the page cache) and the ratio.
"""
import argparse
import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import sluice

COLUMNS = ["id", "x", "y", "v", "s"]


def make(path, rows):
    rng = np.random.default_rng(7)
    t = pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "x": pa.array(rng.random(rows, dtype=np.float32)),
        "y": pa.array(rng.random(rows)),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(rows * 4, dtype=np.float32)), 4),
        "s": pa.array([f"token-{i % 100003}" for i in range(rows)]),
    })
    pq.write_table(t, path, row_group_size=131072, compression="snappy")


def pyarrow_read(path):
    t = pq.read_table(path, columns=COLUMNS, use_threads=False)
    out = {}
    for c in COLUMNS:
        col = t.column(c).combine_chunks()
        if c == "v":
            out[c] = col.flatten().to_numpy().reshape(-1, 4)
        else:
            out[c] = col.to_numpy(zero_copy_only=False)
    return len(out["id"])


def sluice_read(path, batch_rows):
    n = 0
    for b in sluice.ParquetDataset(path, columns=COLUMNS, batch_rows=batch_rows):
        n += len(b["id"])
    return n


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        rows = fn()
        times.append(time.perf_counter() - t0)
    return rows, min(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--file", default="/tmp/sluice-bench-parquet.parquet")
    p.add_argument("--rows", type=int, default=3_000_000)
    p.add_argument("--batch-rows", type=int, default=65536)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    if not os.path.exists(a.file):
        make(a.file, a.rows)
    print(f"file: {a.file} ({os.path.getsize(a.file) / 1e6:.0f} MB), columns {COLUMNS}")
    rows_pa, t_pa = best(lambda: pyarrow_read(a.file), a.repeats)
    rows_sl, t_sl = best(lambda: sluice_read(a.file, a.batch_rows), a.repeats)
    assert rows_pa == rows_sl, (rows_pa, rows_sl)
    print(f"pyarrow.parquet read_table + to_numpy (use_threads=False): {rows_pa / t_pa / 1e6:.2f} M rows/s")
    print(f"sluice.ParquetDataset(batch_rows={a.batch_rows}): {rows_sl / t_sl / 1e6:.2f} M rows/s")
    print(f"ratio sluice / pyarrow: {t_pa / t_sl:.2f}")


if __name__ == "__main__":
    main()
