"""The cast rule over every one of the 2^32 fp32 inputs, PyTorch the judge:
Backstop's host kernel (bs_k_cast_f32_bf16, from kernels/bs_k_cast.c built
as a shared library for this test) against tensor.to(torch.bfloat16), as
the specification's cast rule asks (docs/behavior.md, §3):

    python cast_torch_all.py LIBBS_CAST_PROBE.so

Every non-NaN input casts to PyTorch's bits; every NaN to the quiet NaN
0x7FC0 (PyTorch's vectorised CPU path writes 0xFFFF: NaNs are compared as
NaNs). The inputs go in chunks of 2^24 bit patterns, every int32 value
once. Exit 0 all agree, 1 the first that does not is named."""

import ctypes
import sys
import time
import warnings

warnings.filterwarnings("ignore")  # numpy's absence

import torch  # noqa: E402

CHUNK = 1 << 24
QUIET_NAN = 0x7FC0


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.bs_k_cast_f32_bf16.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_size_t]
    bits = torch.empty(CHUNK, dtype=torch.int32)
    ours = torch.empty(CHUNK, dtype=torch.int16)
    theirs = torch.empty(CHUNK, dtype=torch.bfloat16)
    t0, nans = time.monotonic(), 0
    for c in range((1 << 32) // CHUNK):
        lo = -(1 << 31) + c * CHUNK
        torch.arange(lo, lo + CHUNK, dtype=torch.int32, out=bits)
        f = bits.view(torch.float32)
        theirs.copy_(f)
        lib.bs_k_cast_f32_bf16(ours.data_ptr(), f.data_ptr(), CHUNK)
        th = theirs.view(torch.int16)
        differ = ours != th
        nan = torch.isnan(f)
        nans += int(nan.sum())
        bad = (differ & ~nan) | (nan & (ours != QUIET_NAN))
        if bool(bad.any()):
            i = int(bad.nonzero()[0])
            print(f"FAIL: fp32 0x{int(bits[i]) & 0xFFFFFFFF:08x}: Backstop "
                  f"0x{int(ours[i]) & 0xFFFF:04x}, PyTorch "
                  f"0x{int(th[i]) & 0xFFFF:04x}")
            return 1
    print(f"ok: 2^32 fp32 inputs cast as PyTorch casts them ({nans} NaNs "
          f"to 0x{QUIET_NAN:04X}), {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
