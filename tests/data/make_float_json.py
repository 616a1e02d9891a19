#!/usr/bin/env python3
"""Writes tests/data/tf/float_json.txt: how python protobuf's json_format
prints float32 values, one "<hex bits> <json text>" line per value.

`sluice cat --json` prints floats the same way; tests/tools/cli_test.cc
checks every line. Run with the venv from make_golden.sh:
  ~/.cache/sluice/tf-venv/bin/python tests/data/make_float_json.py
"""
import json
import os
import random
import struct

from google.protobuf import json_format
from tensorflow.core.example import feature_pb2


def main():
    rng = random.Random(20261121)
    bits = {0x00000000, 0x80000000, 0x3f800000, 0x3dcccccd, 0x00000001, 0x80000001,
            0x007fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x4b000000, 0x4b800001,
            0x5a0e1bca, 0x447a0000, 0x42c80000, 0x3a83126f, 0x38d1b717, 0x7f000000}
    while len(bits) < 2000:
        b = rng.getrandbits(32)
        if (b >> 23) & 0xFF == 0xFF:  # skip inf/nan
            continue
        bits.add(b)
    # Also "nice" decimals a user types.
    for text in ["0.5", "1e-3", "123.456", "1e10", "3.14159", "2.5e-5", "65504", "1e16", "1e15"]:
        bits.add(struct.unpack("<I", struct.pack("<f", float(text)))[0])
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tf", "float_json.txt")
    with open(out, "w") as f:
        for b in sorted(bits):
            v = struct.unpack("<f", struct.pack("<I", b))[0]
            feat = feature_pb2.Feature(float_list=feature_pb2.FloatList(value=[v]))
            text = json.loads(json_format.MessageToJson(feat, indent=None))
            # Re-serialize the single value exactly as MessageToJson printed it.
            raw = json_format.MessageToJson(feat, indent=None)
            start = raw.index("[") + 1
            f.write("%08x %s\n" % (b, raw[start:raw.index("]")]))
            assert text["floatList"]["value"]


if __name__ == "__main__":
    main()
