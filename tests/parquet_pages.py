"""The data pages of a Parquet column chunk, read from the page headers in the file: a
small walker of Thrift's compact protocol, independent of the readers under test."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

DATA_PAGE, DATA_PAGE_V2 = 0, 3


class _Compact:
    """Reads Thrift compact-protocol values from ``data`` starting at ``pos``."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data, self.pos = data, pos

    def byte(self) -> int:
        self.pos += 1
        return self.data[self.pos - 1]

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, kind: int):
        if kind in (1, 2):  # a boolean held in the type of its field
            return kind == 1
        if kind == 3:
            return self.byte()
        if kind in (4, 5, 6):
            return self.zigzag()
        if kind == 7:
            self.pos += 8
            return None
        if kind == 8:
            n = self.varint()
            self.pos += n
            return self.data[self.pos - n : self.pos]
        if kind in (9, 10):
            head = self.byte()
            size = head >> 4 if head >> 4 != 15 else self.varint()
            element = head & 0x0F  # booleans in a list take a byte each
            return [self.byte() == 1 if element in (1, 2) else self.value(element) for _ in range(size)]
        if kind == 11:
            size = self.varint()
            types = self.byte() if size else 0
            return [(self.value(types >> 4), self.value(types & 0x0F)) for _ in range(size)]
        if kind == 12:
            return self.struct()
        raise ValueError(f"unknown compact type {kind}")

    def struct(self) -> dict[int, object]:
        fields: dict[int, object] = {}
        last = 0
        while (head := self.byte()) != 0:
            delta, kind = head >> 4, head & 0x0F
            last = last + delta if delta else self.zigzag()
            fields[last] = self.value(kind)
        return fields


def data_page_rows(path: str | Path, row_group: int, column: int) -> list[int]:
    """The values (rows, for a flat column) of each data page of one column chunk."""
    chunk = pq.ParquetFile(path).metadata.row_group(row_group).column(column)
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    data = Path(path).read_bytes()
    reader, end = _Compact(data, start), start + chunk.total_compressed_size
    rows = []
    while reader.pos < end:
        header = reader.struct()
        kind, size = header[1], header[3]
        if kind == DATA_PAGE:
            rows.append(header[5][1])
        elif kind == DATA_PAGE_V2:
            rows.append(header[8][3])
        reader.pos += size
    return rows


def page_checksums(path: str | Path) -> list[int | None]:
    """The CRC field (``PageHeader.crc``, field 4) of every page of every column chunk
    (``None``: the page has none)."""
    meta = pq.ParquetFile(path).metadata
    data = Path(path).read_bytes()
    out = []
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            chunk = meta.row_group(g).column(c)
            start = chunk.dictionary_page_offset or chunk.data_page_offset
            reader, end = _Compact(data, start), start + chunk.total_compressed_size
            while reader.pos < end:
                header = reader.struct()
                out.append(header.get(4))
                reader.pos += header[3]
    return out
