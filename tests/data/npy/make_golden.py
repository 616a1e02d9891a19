"""Golden .npy / .npz files made by NumPy, for records/npy and NumpyDataset.

Run:  python tests/data/npy/make_golden.py   (any Python with numpy >= 1.17)
Writes the files beside this script and golden.json, which gives for each
file what NumPy reads from it: per array its descr, shape, header version,
the byte offset of its data, and its elements as little-endian bytes (hex),
or, for files sluice must refuse, a substring of the expected error.
Deterministic: .npz members get a fixed timestamp (NumPy's np.savez writes
them the same way otherwise: zipfile members opened with force_zip64=True).
"""
import io
import json
import os
import zipfile

import numpy as np
from numpy.lib import format as npformat

HERE = os.path.dirname(os.path.abspath(__file__))


def values(dtype, shape, seed):
    n = int(np.prod(shape))
    a = (np.arange(n, dtype=np.int64) * 7 + seed * 13) % 251
    dt = np.dtype(dtype)
    if dt.kind == "b":
        a = a % 3 == 0
    elif dt.kind == "f":
        a = a / 8.0 - 10.0
    elif dt.kind == "i":
        a = a - 100
    return a.astype(dt).reshape(shape)


def npy_bytes(arr, version=None):
    buf = io.BytesIO()
    npformat.write_array(buf, arr, version=version, allow_pickle=True)
    return buf.getvalue()


def describe(arr, raw):
    buf = io.BytesIO(raw)
    version = npformat.read_magic(buf)
    hdr = (npformat.read_array_header_1_0 if version == (1, 0)
           else npformat.read_array_header_2_0)(buf)
    le = arr.astype(arr.dtype.newbyteorder("<")) if arr.dtype.byteorder == ">" else arr
    return {"descr": npformat.dtype_to_descr(arr.dtype), "shape": list(arr.shape),
            "version": list(version), "fortran_order": hdr[1], "data_offset": buf.tell(),
            "le_hex": np.ascontiguousarray(le).tobytes().hex()}


def write_npz(name, members):
    """members: (name, array, compress). As np.savez writes them."""
    with zipfile.ZipFile(os.path.join(HERE, name), "w", allowZip64=True) as zf:
        for mname, arr, compress in members:
            info = zipfile.ZipInfo(mname + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
            with zf.open(info, "w", force_zip64=True) as fid:
                npformat.write_array(fid, arr, allow_pickle=False)
    # What NumPy reads back, and where each stored member's data lies.
    out = {}
    with np.load(os.path.join(HERE, name)) as z, zipfile.ZipFile(os.path.join(HERE, name)) as zf:
        for mname, arr, compress in members:
            got = z[mname]
            assert got.dtype == arr.dtype and (got == arr).all()
            d = describe(got, npy_bytes(arr))
            d["compressed"] = compress
            out[mname] = d
    return out


def main():
    golden = {"numpy": np.__version__, "npy": {}, "npz": {}, "bad": {}}
    arrays = {
        "bool_6.npy": (values("?", (6,), 1), None),
        "uint8_5x3.npy": (values("u1", (5, 3), 2), None),
        "int32_4x2x3.npy": (values("<i4", (4, 2, 3), 3), None),
        "int64_7.npy": (values("<i8", (7,), 4), None),
        "float16_3x4.npy": (values("<f2", (3, 4), 5), None),
        "float32_10x3.npy": (values("<f4", (10, 3), 6), None),
        "float64_5x2.npy": (values("<f8", (5, 2), 7), None),
        "int32_be_6x2.npy": (values(">i4", (6, 2), 8), None),
        "float64_be_4.npy": (values(">f8", (4,), 9), None),
        "float32_be_3x2.npy": (values(">f4", (3, 2), 10), None),
        "int64_be_5.npy": (values(">i8", (5,), 11), None),
        "empty_0x3.npy": (values("<f4", (0, 3), 12), None),
        "scalar.npy": (values("<i8", (), 13), None),
        "v2_float32_6x2.npy": (values("<f4", (6, 2), 14), (2, 0)),
        "v3_int32_5.npy": (values("<i4", (5,), 15), (3, 0)),
        "uint16_tokens.npy": (values("<u2", (1000,), 16), None),
        "int32_tokens.npy": (values("<i4", (1000,), 17), None),
        "int16_8.npy": (values("<i2", (8,), 18), None),
        "uint32_6.npy": (values("<u4", (6,), 19), None),
        "int8_6.npy": (values("i1", (6,), 20), None),
    }
    for name, (arr, version) in arrays.items():
        raw = npy_bytes(arr, version)
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(raw)
        back = np.load(os.path.join(HERE, name))
        assert back.dtype == arr.dtype and back.shape == arr.shape and (back == arr).all()
        golden["npy"][name] = describe(arr, raw)

    bad = {
        "fortran_3x2.npy": (np.asfortranarray(values("<f4", (3, 2), 21)), "fortran_order"),
        "object.npy": (np.array([1, "a", None], dtype=object), "object"),
        "complex64_3.npy": (values("<f4", (3,), 22).astype("<c8"), "<c8"),
        "uint64_3.npy": (values("<u8", (3,), 23), "<u8"),
    }
    for name, (arr, substring) in bad.items():
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(npy_bytes(arr))
        golden["bad"][name] = substring

    x = values("<f4", (10, 3), 30)
    y = values("<i8", (10,), 31)
    z = values("<i4", (4,), 32)
    golden["npz"]["stored.npz"] = write_npz("stored.npz", [("x", x, False), ("y", y, False),
                                                           ("z", z, False)])
    golden["npz"]["deflated.npz"] = write_npz("deflated.npz", [("x", x, True), ("y", y, True)])
    golden["npz"]["mixed.npz"] = write_npz("mixed.npz", [("x", x, False), ("y", y, True),
                                                         ("z", z, False)])
    with open(os.path.join(HERE, "golden.json"), "w") as f:
        json.dump(golden, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
