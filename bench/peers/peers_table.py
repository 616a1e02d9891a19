"""Turns scripts/bench-peers.sh's results (one JSON line per run) into the
markdown tables of docs/perf.md: "Peers side by side" (cases 1-8: the
median of each system per case, our ratio to each peer and to the physical
limit, and the targets: the cases' own and sluice >= 1.0x every peer) and "File formats against tf.data (issue 40)"
(cases text, csv, fixedlength: sluice, tf.data and sluice-python, items/s
and MB/s, the ratios). Prints each section whose cases ran and, when
PERF_MD is set, replaces the text between its markers in that file
(`<!-- peers:begin -->` / `<!-- peers:end -->`, `<!-- formats:begin -->` /
`<!-- formats:end -->`; a section and its markers are appended if
missing). Standard library only; the inputs come from the environment (see
the end of bench-peers.sh).
"""
import json
import os
import re
import statistics

BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"
FORMATS_BEGIN, FORMATS_END = "<!-- formats:begin -->", "<!-- formats:end -->"
FORMAT_CASES = {
    "text": ("TextLineDataset, log-like lines of ~120 bytes, batch 4096", "lines/s", "text"),
    "csv": ("CsvDataset, 6 typed columns (~43-byte rows), batch 4096", "rows/s", "csv"),
    "fixedlength": ("FixedLengthRecordDataset, 3,073-byte records (CIFAR-10), batch 1024",
                    "records/s", "fixed"),
}
CASES = {
    1: ("ImageNet-like TFRecords -> 224x224 batches, full decode", "images/s"),
    2: ("the same, crop-window (fused) decode", "images/s"),
    3: ("raw TFRecord reading, CRCs checked", "records/s"),
    4: ("batched Example parsing (batch 1024)", "Examples/s"),
    5: ("image folder -> TFRecords", "images/s"),
    6: ("case 2 on restart-marked shards (`convert --restart-interval 1`)", "images/s"),
    7: ("image folder -> case 1's batches (every system reads the files)", "images/s"),
    8: ("WebDataset tar shards -> case 1's batches", "images/s"),
}
# The peers' columns: (system in the results, column title).
PEERS = [("tf.data", "tf.data"), ("dali", "DALI"), ("spdl", "SPDL"), ("grain", "Grain"),
         ("torch", "torch"), ("webdataset", "webdataset"), ("python", "Python loop")]
# case: [(peer, minimum ratio sluice / peer)]
TARGETS = {1: [("tf.data", 1.5), ("bare", 0.9)], 2: [("tf.data", 2.0)],
           3: [("tf.data", 3.0)], 4: [("tf.data", 2.0)], 5: [("python", 5.0)],
           6: [("tf.data", 2.0)], 7: [], 8: []}
PEER_NAMES = dict(PEERS, bare="bare limit")


def fmt(x):
    if x is None:
        return "—"
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x:,.0f}"


def meta_lines(env, n_runs):
    """The run's date title, machine, versions, command and load: (title, lines)."""
    other = float(env.get("META_OTHER_CPU", "0") or 0)
    before = float(env.get("META_LOAD_BEFORE", "0") or 0)
    peak = float(env.get("META_LOAD_MAX", "0") or 0)
    cores = int(env["CORES"])
    steal = float(env.get("META_STEAL_CPU", "0") or 0)
    # The peak load average is reported, not judged: the peers' thread pools
    # (dozens of threads on CORES CPUs) raise it by themselves.
    busy = before > 1.5 or other > 0.3 or steal > 0.1
    title = f"### {env['META_DATE']}"
    if busy:
        title += " — PROVISIONAL: the machine was shared while measured"
    lines = [f"Machine: {env['META_CPU']}. Versions: {env['META_VERSIONS']}.",
             f"Command: `{env['META_COMMAND']}` ({env['ROUNDS']} alternating rounds, "
             f"{env['DURATION']} s timed after {env['WARMUP']} s warm-up per run; "
             f"medians; {n_runs}).",
             f"Load: 1-min load average {before:.2f} before the run, {peak:.2f} at most "
             f"during it (our own runs account for up to {cores}); other processes used "
             f"{other:.2f} CPUs on average, and the hypervisor took {steal:.2f} CPUs (steal)."
             + (" Numbers taken under this load are provisional: rerun on a quiet machine."
                if busy else "")]
    return title, lines


def replace_section(text, begin, end, section, heading):
    if begin in text and end in text:
        return re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: section, text,
                      flags=re.S)
    return text.rstrip("\n") + f"\n\n{heading}\n\n" + section + "\n"


def formats_section(env, runs):
    """The file formats' table (cases text, csv, fixedlength), or None if none ran."""
    med = {k: statistics.median(v) for k, v in runs.items() if k[0] in FORMAT_CASES}
    if not med:
        return None
    bytes_per_item = dict(kv.split("=") for kv in env.get("FORMAT_BYTES_PER_ITEM", "").split())
    reads = env.get("FORMAT_READS", "1")
    counts = {"text": env.get("TEXT_LINES"), "csv": env.get("CSV_ROWS"),
              "fixedlength": env.get("FIXED_RECORDS")}
    title, lines = meta_lines(env, ", ".join(
        f"{counts[c]} {unit.split('/')[0]} for {c}" for c, (_, unit, _) in FORMAT_CASES.items()
        if any(k[0] == c for k in med)))
    out = [FORMATS_BEGIN, "", title, ""] + lines
    out += ["", "| case | unit | sluice | tf.data | sluice-python | sluice / tf.data | "
            "sluice-python / tf.data | sluice-python / sluice | MB/s sluice, tf.data, "
            "sluice-python |", "|---|---|---|---|---|---|---|---|---|"]
    for case, (what, unit, kind) in FORMAT_CASES.items():
        s, tf, py = (med.get((case, sys)) for sys in ("sluice", "tf.data", "sluice-python"))
        if s is None and tf is None and py is None:
            continue
        per = float(bytes_per_item.get(kind, 0) or 0)

        def ratio(a, b):
            return f"{a / b:.2f}x" if a and b else "—"

        mbs = ", ".join(f"{x * per / 1e6:,.0f}" if x and per else "—" for x in (s, tf, py))
        out.append("| " + " | ".join([
            f"{case}: {what}", unit, fmt(s), fmt(tf), fmt(py), ratio(s, tf), ratio(py, tf),
            ratio(py, s), mbs]) + " |")
    n_runs = sorted((c, sys, len(v)) for (c, sys), v in runs.items() if c in FORMAT_CASES)
    out += ["", f"Every system reads num_parallel_reads={reads} "
            f"({'one file at a time' if reads == '1' else 'files at once'}), the dataset "
            "repeated, batched with drop_remainder and prefetched (AUTOTUNE); sluice-python "
            "iterates the same pipeline from Python and gets strings as NumPy object arrays "
            "of bytes (one Python object per line, row name or record), tf.data's Python "
            "loop gets one tensor per batch. MB/s: items/s x the files' mean bytes per item "
            f"({', '.join(f'{k} {v}' for k, v in bytes_per_item.items())}). Run counts: "
            + ", ".join(f"{c}/{sys} {n}" for c, sys, n in n_runs) + ".", "", FORMATS_END]
    return "\n".join(out)


def main():
    env = os.environ
    runs = {}
    extra = {}
    with open(env["RESULTS"]) as f:
        for line in f:
            r = json.loads(line)
            if r["case_no"] in FORMAT_CASES:
                runs.setdefault((r["case_no"], r["system"]), []).append(r["items_per_s"])
                continue
            key = (r["case_no"], "python" if r["system"] == "tf.data" and r["case_no"] == 5
                   else r["system"])
            runs.setdefault(key, []).append(r["items_per_s"])
            if r["system"] == "bare" and r["case"] == "read":
                extra.setdefault("pread", []).append(r["pread_bytes_per_s"])
                extra.setdefault("memcpy", []).append(r["memcpy_bytes_per_s"])
                extra["record_bytes"] = r["record_bytes"]
            if r["system"] == "sluice" and "repeats" in r:
                extra["convert_repeats"] = r["repeats"]
    formats = formats_section(env, runs)
    runs = {k: v for k, v in runs.items() if k[0] not in FORMAT_CASES}
    path = env.get("PERF_MD")
    if not runs:  # only file formats ran: the peers' table is left as it is
        if formats:
            print(formats)
            if path:
                with open(path) as f:
                    text = f.read()
                text = replace_section(text, FORMATS_BEGIN, FORMATS_END, formats,
                                       "## File formats against tf.data (issue 40)")
                with open(path, "w") as f:
                    f.write(text)
        return
    med = {k: statistics.median(v) for k, v in runs.items()}
    if (1, "bare") in med and (2, "sluice") in med:
        med[(2, "bare")] = med[(1, "bare")]  # the same images, the same limit
    n_runs = {k: len(v) for k, v in runs.items()}

    cores = int(env["CORES"])
    title, lines = meta_lines(env, f"{env['n_images']} images, {env['RECORDS']} small Examples")
    out = [BEGIN, "", title, ""] + lines
    if env.get("META_PEER_NOTES"):
        out.append("Peers not measured: " + env["META_PEER_NOTES"].replace(";", "; ") + ".")
    columns = [p for p, _ in PEERS if any(k[1] == p for k in med)]
    out += ["", "| # | case | unit | sluice | sluice-python | " +
            " | ".join(PEER_NAMES[p] for p in columns) + " | bare limit | targets | met? |",
            "|---|---|---|---|---|" + "---|" * len(columns) + "---|---|---|"]
    for no, (what, unit) in CASES.items():
        s = med.get((no, "sluice"))
        peers = {p: med.get((no, p)) for p in columns + ["bare"]}
        if s is None and not any(peers.values()):
            continue

        def ratio(p):
            v = peers.get(p)
            return s / v if s and v else None

        def cell(p):
            v = peers.get(p)
            return "—" if v is None else fmt(v) + (f" ({ratio(p):.2f}x)" if ratio(p) else "")

        targets, verdicts = [], []
        for peer, want in TARGETS[no]:
            name = PEER_NAMES[peer]
            targets.append(f"≥ {want:g}x {name}" if peer != "bare" else f"≥ {want:.0%} of bare")
            got = ratio(peer)
            if got is None:
                verdicts.append(f"{name}: not measured")
            elif got >= want:
                verdicts.append(f"**met** ({got:.2f}x)")
            else:
                verdicts.append(f"**missed** by {(1 - got / want):.0%} ({got:.2f}x of {want:g}x)")
        measured = [(ratio(p), PEER_NAMES[p]) for p in columns if ratio(p)]
        if measured:
            targets.append("≥ 1x every peer")
            worst, name = min(measured)
            verdicts.append(f"**met** (closest: {name} {worst:.2f}x)" if worst >= 1.0
                            else f"**missed**: {name} {worst:.2f}x")
        py = med.get((no, "sluice-python"))
        py_cell = "—" if py is None else fmt(py) + (f" ({py / s:.2f} of C++)" if s else "")
        out.append("| " + " | ".join(
            [str(no), what, unit, fmt(s), py_cell] + [cell(p) for p in columns] +
            [fmt(peers["bare"]) + (f" ({s / peers['bare']:.2f})" if s and peers["bare"] else ""),
             "; ".join(targets), "; ".join(verdicts)]) + " |")
    out.append("")
    out.append("Each peer's cell: its images (or records) per second, and in brackets sluice's "
               "rate over it (above 1.00x: sluice is faster); sluice-python's: the C++ "
               "pipeline's share it reaches; bare's: sluice's share of the bare limit.")
    out.append("")
    if "pread" in extra:
        out.append(
            f"Case 3's bare limit is `pread` of the cached files on {cores} threads: "
            f"{statistics.median(extra['pread']) / 1e9:.2f} GB/s "
            f"(memcpy {statistics.median(extra['memcpy']) / 1e9:.2f} GB/s), divided by the mean "
            f"framed record size ({extra['record_bytes']:.0f} bytes).")
    for no in (1, 2, 6):
        s, loop, bare = med.get((no, "sluice")), med.get((no, "loop")), med.get((no, "bare"))
        if s and loop:
            out.append(
                f"Case {no}'s work in a plain loop (its map function on {cores} threads over "
                f"the records in memory, no pipeline: `sluice_cases --loop 1`): {fmt(loop)} "
                f"images/s" + (f", {loop / bare:.2f} of bare" if bare and no == 1 else "") +
                f"; the pipeline reaches {s / loop:.2f} of it.")
    for no in (1, 2, 3, 4, 6, 7, 8):
        s, py = med.get((no, "sluice")), med.get((no, "sluice-python"))
        if s and py:
            out.append(
                f"Case {no} from Python (`bench/peers/python_cases.py`: the same pipeline "
                f"with sluice's Python package, iterated from Python): {fmt(py)} "
                f"{CASES[no][1]}, "
                f"{py / s:.2f} of the C++ `sluice_cases` (target ≥ 0.95: "
                f"{'**met**' if py / s >= 0.95 else '**missed**'}).")
    out.append("Case 1's bare limit is `tjDecompress2` of the same JPEGs (whole image, RGB, fast "
               "DCT) on every core, nothing else; case 2 shows the same number. "
               f"Every peer runs with {cores} threads or worker processes (the cores given). "
               "DALI (`bench/peers/dali_cases.py`): its CPU pipeline (device_id=None, "
               "num_threads=cores, batch 128) as its docs write an ImageNet training pipeline: "
               "readers.tfrecord with sluice's .idx files (1, 6), readers.file (7), "
               "readers.webdataset (8) -> decoders.image -> random_resized_crop -> "
               "crop_mirror_normalize with a coin flip; case 2 decodes only the window "
               "(decoders.image_random_crop, its ROI decode). SPDL (`spdl_cases.py`): its thread "
               "pipeline with FFmpeg decoding; Grain (`grain_cases.py`): MapDataset with PIL "
               "decode in worker processes; torch: ImageFolder + RandomResizedCrop/"
               "RandomHorizontalFlip/ToTensor/Normalize with DataLoader(num_workers=cores); "
               "webdataset: WebDataset(resampled) -> shuffle(1000) -> decode('pil') -> the same "
               "transforms with WebLoader(num_workers=cores). SPDL, Grain and torch have no "
               "TFRecord reader, so they run case 7 only. Case 5's peer is the TFRecord tutorial's loop "
               "(read the file, shape from the JPEG header, tf.train.Example, "
               "TFRecordWriter.write) in one Python process; sluice uses one worker per core; "
               "both rates are the ones each reports for its conversion (no process start, no "
               "import)" + (f"; sluice's is the combined rate of {extra['convert_repeats']} "
                            "conversions per run (one takes well under a second)"
                            if "convert_repeats" in extra else "") + ". "
               "Run counts: " + ", ".join(f"{c}/{s} {n}" for (c, s), n in sorted(n_runs.items()))
               + ".")
    out += ["", END]
    section = "\n".join(out)
    print(section)
    if formats:
        print(formats)
    if path:
        with open(path) as f:
            text = f.read()
        text = replace_section(text, BEGIN, END, section, "## Peers side by side")
        if formats:
            text = replace_section(text, FORMATS_BEGIN, FORMATS_END, formats,
                                   "## File formats against tf.data (issue 40)")
        with open(path, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
