#!/usr/bin/env python3
"""halftape's FP8 conversions (ground/fp8.h) against an independent oracle, ml_dtypes'
float8_e4m3fn and float8_e5m2: every code's value, every FP32 rounding boundary the oracle's own
code table gives (each code, each midpoint between neighbours and the fp32 numbers either side),
beyond the largest finite value, the infinities, NaN, and a million random fp32 patterns.
ml_dtypes rounds to nearest even but does not saturate (an overflow becomes NaN in E4M3, inf in
E5M2); halftape's casts saturate as Transformer Engine's do, so the expected code of a finite or
infinite overflow is the largest finite one, with its sign. NaN must stay NaN.

    tests/fp8_oracle.py HALFTAPE_TESTS_BINARY [ML_DTYPES_DIR]
It writes the cases to a file and runs the test binary's "[fp8-oracle]" case on them."""
import os
import subprocess
import sys
import tempfile

ML_DTYPES_DIR = sys.argv[2] if len(sys.argv) > 2 else "/usr/local/share/halftape/ml_dtypes-0.3.2"
sys.path.insert(0, ML_DTYPES_DIR)
try:
    import ml_dtypes
    import numpy as np
except ImportError as e:
    sys.exit(f"fp8_oracle: cannot import ml_dtypes from {ML_DTYPES_DIR} ({e}): run scripts/setup.sh")


def cases(fp8):
    codes = np.arange(256, dtype=np.uint8).view(fp8).astype(np.float32)
    finite = np.sort(np.unique(np.abs(codes[np.isfinite(codes)])))
    mids = (finite[:-1].astype(np.float64) + finite[1:]) / 2
    step = finite[-1] - finite[-2]
    mids = np.append(mids, finite[-1] + step / 2).astype(np.float32)  # the saturation boundary
    points = np.concatenate([finite, mids, np.nextafter(mids, np.float32(0)), np.nextafter(mids, np.float32(np.inf)),
                             np.nextafter(finite, np.float32(np.inf)), np.nextafter(finite, np.float32(0)),
                             np.array([1e6, 3e38, np.inf, np.nan, 1e-30, 1e-45], dtype=np.float32)]).astype(np.float32)
    rng = np.random.default_rng(7)
    random = rng.integers(0, 2**32, size=1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([points, -points, random]).astype(np.float32)
    expected = x.astype(fp8).view(np.uint8).copy()
    biggest = np.abs(finite).max()
    overflow = ~np.isnan(x) & (np.abs(x) > biggest) & ~np.isfinite(x.astype(fp8).astype(np.float32))
    max_code = np.array([biggest], dtype=np.float32).astype(fp8).view(np.uint8)[0]
    expected[overflow] = np.where(np.signbit(x[overflow]), max_code | 0x80, max_code).astype(np.uint8)
    return x, expected, codes


def main():
    binary = sys.argv[1]
    with tempfile.NamedTemporaryFile(suffix=".fp8", delete=False) as f:
        path = f.name
        for fp8 in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
            x, expected, codes = cases(fp8)
            f.write(np.array([len(x)], dtype=np.int32).tobytes())
            f.write(x.tobytes())
            f.write(expected.tobytes())
            f.write(codes.astype(np.float32).tobytes())
            print(f"fp8_oracle: {fp8.__name__}: {len(x)} inputs ({len(x) - (1 << 20)} at the rounding boundaries), 256 codes")
    try:
        run = subprocess.run([binary, "[fp8-oracle]"], env={**os.environ, "HT_FP8_ORACLE": path})
    finally:
        os.unlink(path)
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
