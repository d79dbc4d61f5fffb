"""Reader of the IDX format (MNIST, Fashion-MNIST): a typed n-dimensional array, big-endian.

Layout (LeCun's MNIST page): two zero bytes, a type byte, the number of dimensions d, then d sizes
as big-endian uint32, then the values in row-major order, big-endian. The files are served
gzip-compressed (`*.gz`); gzip is recognised by its magic bytes, not by the file name.
"""
from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np

from workbench.errors import UserError

__all__ = ["IDX_TYPES", "read_idx"]

IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_GZIP_MAGIC = b"\x1f\x8b"


def read_idx(path: str | Path) -> np.ndarray:
    """The array stored in IDX file `path` (gzip-compressed or not), in native byte order."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as err:
            raise UserError(f"{path}: a gzip file that cannot be decompressed ({err}); it is "
                            "truncated or corrupt") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in IDX_TYPES:
        raise UserError(f"{path} is not an IDX file: it must start with 00 00 <type> <ndim>, "
                        f"type one of {', '.join(hex(t) for t in IDX_TYPES)}; got {raw[:4].hex()}")
    dtype, ndim = np.dtype(IDX_TYPES[raw[2]]), raw[3]
    if len(raw) < 4 + 4 * ndim:
        raise UserError(f"{path}: {len(raw)} bytes, shorter than its IDX header says ("
                        f"{4 + 4 * ndim} bytes for {ndim} dimensions); it is truncated or corrupt")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    offset = 4 + 4 * ndim
    expected = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        raise UserError(f"{path}: header says shape {shape} of {dtype} ({expected} bytes with the "
                        f"header) but the file holds {len(raw)} bytes; it is truncated or corrupt")
    data = np.frombuffer(raw, dtype=dtype, offset=offset).reshape(shape)
    return data.astype(dtype.newbyteorder("="))
