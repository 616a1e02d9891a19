"""Turns scripts/bench-peers.sh's results (one JSON line per run) into the
markdown table of docs/perf.md's "Peers side by side": the median of each
system per case, our ratio to each peer and to the physical limit, and the
targets. Prints the section and, when PERF_MD is set, replaces the text
between `<!-- peers:begin -->` and `<!-- peers:end -->` in that file (the
section and markers are appended if missing). Standard library only; the
inputs come from the environment (see the end of bench-peers.sh).
"""
import json
import os
import re
import statistics

BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"
CASES = {
    1: ("ImageNet-like TFRecords -> 224x224 batches, full decode", "images/s"),
    2: ("the same, crop-window (fused) decode", "images/s"),
    3: ("raw TFRecord reading, CRCs checked", "records/s"),
    4: ("batched Example parsing (batch 1024)", "Examples/s"),
    5: ("image folder -> TFRecords", "images/s"),
    6: ("case 2 on restart-marked shards (`convert --restart-interval 1`)", "images/s"),
}
# case: [(peer, minimum ratio sluice / peer)]
TARGETS = {1: [("tf.data", 1.5), ("bare", 0.9)], 2: [("tf.data", 2.0)],
           3: [("tf.data", 3.0)], 4: [("tf.data", 2.0)], 5: [("python", 5.0)],
           6: [("tf.data", 2.0)]}
PEER_NAMES = {"tf.data": "tf.data", "bare": "bare limit", "python": "Python loop"}


def fmt(x):
    if x is None:
        return "—"
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x:,.0f}"


def main():
    env = os.environ
    runs = {}
    extra = {}
    with open(env["RESULTS"]) as f:
        for line in f:
            r = json.loads(line)
            key = (r["case_no"], "python" if r["system"] == "tf.data" and r["case_no"] == 5
                   else r["system"])
            runs.setdefault(key, []).append(r["items_per_s"])
            if r["system"] == "bare" and r["case"] == "read":
                extra.setdefault("pread", []).append(r["pread_bytes_per_s"])
                extra.setdefault("memcpy", []).append(r["memcpy_bytes_per_s"])
                extra["record_bytes"] = r["record_bytes"]
            if r["system"] == "sluice" and "repeats" in r:
                extra["convert_repeats"] = r["repeats"]
    med = {k: statistics.median(v) for k, v in runs.items()}
    if (1, "bare") in med:
        med[(2, "bare")] = med[(1, "bare")]  # the same images, the same limit
    n_runs = {k: len(v) for k, v in runs.items()}

    other = float(env.get("META_OTHER_CPU", "0") or 0)
    before = float(env.get("META_LOAD_BEFORE", "0") or 0)
    peak = float(env.get("META_LOAD_MAX", "0") or 0)
    cores = int(env["CORES"])
    steal = float(env.get("META_STEAL_CPU", "0") or 0)
    # The peak load average is reported, not judged: the peers' thread pools
    # (dozens of threads on CORES CPUs) raise it by themselves.
    busy = before > 1.5 or other > 0.3 or steal > 0.1
    out = [BEGIN, ""]
    title = f"### {env['META_DATE']}"
    if busy:
        title += " — PROVISIONAL: the machine was shared while measured"
    out += [title, ""]
    out.append(f"Machine: {env['META_CPU']}. Versions: {env['META_VERSIONS']}.")
    out.append(f"Command: `{env['META_COMMAND']}` ({env['ROUNDS']} alternating rounds, "
               f"{env['DURATION']} s timed after {env['WARMUP']} s warm-up per run; "
               f"medians; {env['n_images']} images, {env['RECORDS']} small Examples).")
    out.append(f"Load: 1-min load average {before:.2f} before the run, {peak:.2f} at most "
               f"during it (our own runs account for up to {cores}); other processes used "
               f"{other:.2f} CPUs on average, and the hypervisor took {steal:.2f} CPUs (steal)."
               + (" Numbers taken under this load are provisional: rerun on a quiet machine."
                  if busy else ""))
    if env.get("META_TORCH_NOTE"):
        out.append(f"PyTorch: {env['META_TORCH_NOTE']}.")
    out += ["", "| # | case | unit | sluice | tf.data | torch | bare limit | "
            "sluice / tf.data | sluice / torch | sluice / bare | target | met? |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for no, (what, unit) in CASES.items():
        s = med.get((no, "sluice"))
        peers = {p: med.get((no, p)) for p in ("tf.data", "torch", "bare", "python")}
        if s is None and not any(peers.values()):
            continue
        tf_col = peers["tf.data"] if no != 5 else peers["python"]

        def ratio(p):
            return s / p if s and p else None

        r_tf, r_torch, r_bare = ratio(tf_col), ratio(peers["torch"]), ratio(peers["bare"])
        targets, verdicts = [], []
        for peer, want in TARGETS[no]:
            name = PEER_NAMES[peer]
            targets.append(f"≥ {want:g}x {name}" if peer != "bare" else f"≥ {want:.0%} of bare")
            got = ratio(peers[peer])
            if got is None:
                verdicts.append(f"{name}: not measured")
            elif got >= want:
                verdicts.append(f"**met** ({got:.2f}x)")
            else:
                verdicts.append(f"**missed** by {(1 - got / want):.0%} ({got:.2f}x of {want:g}x)")
        tf_label = fmt(tf_col) + (" (Python loop)" if no == 5 and tf_col else "")
        out.append("| " + " | ".join([
            str(no), what, unit, fmt(s), tf_label, fmt(peers["torch"]), fmt(peers["bare"]),
            f"{r_tf:.2f}x" if r_tf else "—", f"{r_torch:.2f}x" if r_torch else "—",
            f"{r_bare:.2f}" if r_bare else "—", "; ".join(targets), "; ".join(verdicts)]) + " |")
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
    for no in (1, 2, 6):
        s, py = med.get((no, "sluice")), med.get((no, "sluice-python"))
        if s and py:
            out.append(
                f"Case {no} from Python (`bench/peers/python_cases.py`: the same pipeline "
                f"with sluice's Python package, iterated from Python): {fmt(py)} images/s, "
                f"{py / s:.2f} of the C++ `sluice_cases` (target ≥ 0.95: "
                f"{'**met**' if py / s >= 0.95 else '**missed**'}).")
    out.append("Case 1's bare limit is `tjDecompress2` of the same JPEGs (whole image, RGB, fast "
               "DCT) on every core, nothing else; case 2 shows the same number. torch runs "
               "ImageFolder + RandomResizedCrop/RandomHorizontalFlip/ToTensor/Normalize with "
               "DataLoader(num_workers=cores); it has no TFRecord reader or crop-window decode, "
               "so only case 1 has a torch column. Case 5's peer is the TFRecord tutorial's loop "
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
    path = env.get("PERF_MD")
    if path:
        with open(path) as f:
            text = f.read()
        if BEGIN in text and END in text:
            text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: section, text,
                          flags=re.S)
        else:
            text = text.rstrip("\n") + "\n\n## Peers side by side\n\n" + section + "\n"
        with open(path, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
