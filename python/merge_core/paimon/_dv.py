"""Deletion vectors: the positions of a data file's deleted rows, stored in an index file.

An index file starts with a version byte (1), then holds one entry per data file: a
big-endian length, a magic number, a serialized roaring bitmap and a big-endian CRC32 of
magic and bitmap. The 32-bit form has magic 0x5E43F2D0 (big-endian) and the manifest's
length is the entry's; the 64-bit form (Iceberg's) has magic 0x6439D3D1 written
little-endian and the manifest's length also covers the length and CRC fields.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
from pyroaring import BitMap, BitMap64

from ..errors import CorruptTableError, UnsupportedFeatureError
from ._meta import DeletionVector

INDEX_FILE_VERSION = 1
MAGIC_32 = 0x5E43F2D0
MAGIC_64 = 0x6439D3D1


def deleted_positions(dv: DeletionVector) -> np.ndarray:
    """The deleted row positions (0-based, ascending) that ``dv`` points at."""
    try:
        with dv.path.store.open_input(dv.path.path) as f:
            version = f.read(1)
            f.seek(dv.offset)
            head = f.read(8)
            if len(head) < 8:
                raise CorruptTableError(f"deletion vector at {dv.path}:{dv.offset} is cut short")
            size, magic_be = struct.unpack(">iI", head)
            body = f.read(size - 4)
            crc = f.read(4)
    except FileNotFoundError as e:
        raise CorruptTableError(f"the deletion vector file {dv.path} is missing") from e
    if version != bytes([INDEX_FILE_VERSION]):
        raise UnsupportedFeatureError(f"{dv.path}: deletion vector file version {version!r} is not supported")
    (magic_le,) = struct.unpack("<I", head[4:])
    if magic_be == MAGIC_32 and size == dv.length:
        wide = False
    elif magic_le == MAGIC_64 and size == dv.length - 8:
        wide = True
    else:
        raise CorruptTableError(f"{dv.path}:{dv.offset} is not a deletion vector (length or magic number differ)")
    if len(body) != size - 4 or len(crc) != 4 or zlib.crc32(head[4:] + body) != struct.unpack(">I", crc)[0]:
        raise CorruptTableError(f"deletion vector at {dv.path}:{dv.offset} fails its checksum")
    try:
        bitmap = BitMap64.deserialize(body) if wide else BitMap.deserialize(body)
    except Exception as e:
        raise CorruptTableError(f"deletion vector at {dv.path}:{dv.offset} is not a roaring bitmap ({e})") from e
    return np.fromiter(bitmap, dtype=np.uint64, count=len(bitmap))
