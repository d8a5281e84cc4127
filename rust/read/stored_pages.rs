//! A dictionary page kept by the lookup cache, re-framed so that using it again costs a
//! copy instead of a decompression.
//!
//! A point lookup's hit reads, of every column, the data page holding its row, and the
//! Parquet reader decodes the column's dictionary page before it (even to skip values:
//! it installs the dictionary at the first dictionary-encoded page it meets). The lookup
//! cache keeps those dictionary pages, but as stored: every hit decompressed them again,
//! most of a warm lookup's time for zstd files (a key column's dictionary is up to a
//! megabyte). Kept instead is the same page with its body as a zstd frame of *raw*
//! blocks (the format's uncompressed blocks, RFC 8878 section 3.1.1.2.2): any zstd
//! decoder turns it into the same bytes with a copy. The page header is rewritten with
//! the new body's size and, where the writer stored one, its CRC, so the page stays
//! valid for every check the reader makes.
//!
//! The header is Thrift's compact encoding of Parquet's `PageHeader`; only the
//! top-level fields 2, 3 and 4 (uncompressed size, compressed size, CRC: `i32`s) are
//! read, every other field is skipped whole and copied as it is.

use bytes::Bytes;

/// `page` (a page header and its zstd-compressed body, nothing after) with its body as
/// raw zstd blocks; `None` if the page is not one this can re-frame (an unknown header,
/// a body that does not decompress to its stated size), which is then kept as stored.
pub(crate) fn with_raw_zstd_body(page: &[u8]) -> Option<Bytes> {
    let header = PageHeader::parse(page)?;
    let body = page.get(header.len..)?;
    if body.len() != usize::try_from(header.compressed.value).ok()? {
        return None;
    }
    let size = usize::try_from(header.uncompressed.value).ok()?;
    let content = zstd::bulk::decompress(body, size).ok()?;
    if content.len() != size {
        return None;
    }
    let frame = raw_frame(&content);
    let mut fields = vec![(&header.compressed, i32::try_from(frame.len()).ok()?)];
    if let Some(crc) = &header.crc {
        fields.push((crc, crc32fast::hash(&frame) as i32));
    }
    fields.sort_by_key(|(field, _)| field.at.start);
    let mut out = Vec::with_capacity(header.len + frame.len() + 10);
    let mut copied = 0;
    for (field, value) in fields {
        out.extend_from_slice(&page[copied..field.at.start]);
        put_varint(&mut out, zigzag(value));
        copied = field.at.end;
    }
    out.extend_from_slice(&page[copied..header.len]);
    out.extend_from_slice(&frame);
    Some(Bytes::from(out))
}

/// The largest block a zstd frame may hold.
const MAX_BLOCK: usize = 128 << 10;

/// `content` as one zstd frame of raw blocks: the magic number, a header with the
/// content size (single segment, no checksum), then blocks of at most 128 KiB.
fn raw_frame(content: &[u8]) -> Vec<u8> {
    let blocks = content.len().div_ceil(MAX_BLOCK).max(1);
    let mut frame = Vec::with_capacity(content.len() + 13 + 3 * blocks);
    frame.extend_from_slice(&0xFD2F_B528u32.to_le_bytes());
    frame.push(0b1110_0000); // an 8-byte content size, single segment
    frame.extend_from_slice(&(content.len() as u64).to_le_bytes());
    for b in 0..blocks {
        let block = &content[(b * MAX_BLOCK).min(content.len())..((b + 1) * MAX_BLOCK).min(content.len())];
        let last = u32::from(b + 1 == blocks);
        let head = (block.len() as u32) << 3 | last; // block type 0: raw
        frame.extend_from_slice(&head.to_le_bytes()[..3]);
        frame.extend_from_slice(block);
    }
    frame
}

/// An `i32` field of the header: its value and where its encoding lies.
#[derive(Debug)]
struct I32Field {
    value: i32,
    at: std::ops::Range<usize>,
}

/// What is read of a page header: its encoded length and fields 2, 3 and 4.
#[derive(Debug)]
struct PageHeader {
    len: usize,
    uncompressed: I32Field,
    compressed: I32Field,
    crc: Option<I32Field>,
}

impl PageHeader {
    fn parse(bytes: &[u8]) -> Option<Self> {
        let mut reader = Compact { bytes, at: 0 };
        let (mut uncompressed, mut compressed, mut crc) = (None, None, None);
        let mut id = 0i16;
        loop {
            let (field, kind) = reader.field_header(&mut id)?;
            if kind == STOP {
                break;
            }
            match (field, kind) {
                (2..=4, I32) => {
                    let start = reader.at;
                    let value = unzigzag(reader.varint()?) as i32;
                    let found = Some(I32Field { value, at: start..reader.at });
                    match field {
                        2 => uncompressed = found,
                        3 => compressed = found,
                        _ => crc = found,
                    }
                }
                _ => reader.skip(kind, 0)?,
            }
        }
        Some(Self { len: reader.at, uncompressed: uncompressed?, compressed: compressed?, crc })
    }
}

const STOP: u8 = 0;
const I32: u8 = 5;
/// Nesting deeper than this is not a page header.
const MAX_DEPTH: usize = 16;

/// A reader of Thrift's compact protocol over `bytes` from `at`.
struct Compact<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Compact<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    /// The next field's id (deltas from `last`) and type; type 0 is the struct's end.
    fn field_header(&mut self, last: &mut i16) -> Option<(i16, u8)> {
        let b = self.byte()?;
        let kind = b & 0x0F;
        if kind == STOP {
            return Some((0, STOP));
        }
        let delta = i16::from(b >> 4);
        *last = if delta == 0 { unzigzag(self.varint()?) as i16 } else { last.checked_add(delta)? };
        Some((*last, kind))
    }

    /// Skips a value of compact type `kind`.
    fn skip(&mut self, kind: u8, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match kind {
            1 | 2 => {}                  // a boolean field: its value is its type
            3 => self.at += 1,           // byte
            4..=6 => _ = self.varint()?, // i16, i32, i64
            7 => self.at += 8,           // double
            8 => {
                let len = usize::try_from(self.varint()?).ok()?;
                self.at = self.at.checked_add(len)?;
            }
            9 | 10 => {
                let head = self.byte()?;
                let size = match head >> 4 {
                    15 => usize::try_from(self.varint()?).ok()?,
                    n => usize::from(n),
                };
                let element = head & 0x0F;
                for _ in 0..size {
                    self.skip_element(element, depth + 1)?;
                }
            }
            11 => {
                let size = usize::try_from(self.varint()?).ok()?;
                if size > 0 {
                    let kinds = self.byte()?;
                    for _ in 0..size {
                        self.skip_element(kinds >> 4, depth + 1)?;
                        self.skip_element(kinds & 0x0F, depth + 1)?;
                    }
                }
            }
            12 => {
                let mut id = 0;
                loop {
                    let (_, field) = self.field_header(&mut id)?;
                    if field == STOP {
                        break;
                    }
                    self.skip(field, depth + 1)?;
                }
            }
            _ => return None,
        }
        (self.at <= self.bytes.len()).then_some(())
    }

    /// Skips an element of a list, set or map, where a boolean takes a byte.
    fn skip_element(&mut self, kind: u8, depth: usize) -> Option<()> {
        match kind {
            1 | 2 => self.at += 1,
            _ => self.skip(kind, depth)?,
        }
        (self.at <= self.bytes.len()).then_some(())
    }
}

fn zigzag(value: i32) -> u64 {
    u64::from(((value << 1) ^ (value >> 31)) as u32)
}

fn unzigzag(value: u64) -> i64 {
    (value >> 1) as i64 ^ -((value & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_frame_decompresses_to_its_content() {
        for len in [0, 1, 1000, MAX_BLOCK, MAX_BLOCK + 1, 3 * MAX_BLOCK + 17] {
            let content: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let frame = raw_frame(&content);
            assert_eq!(zstd::bulk::decompress(&frame, len).unwrap(), content, "{len} bytes");
        }
    }

    #[test]
    fn varints_and_zigzag_round_trip() {
        for value in [0, 1, -1, 63, -64, 64, 1 << 20, i32::MAX, i32::MIN] {
            let mut out = Vec::new();
            put_varint(&mut out, zigzag(value));
            let mut reader = Compact { bytes: &out, at: 0 };
            assert_eq!(unzigzag(reader.varint().unwrap()) as i32, value);
            assert_eq!(reader.at, out.len());
        }
    }

    /// A dictionary page's header as a writer encodes it: type, sizes, an optional CRC,
    /// then the dictionary page header (a struct) and the end of the struct.
    fn header(uncompressed: i32, compressed: i32, crc: Option<i32>) -> Vec<u8> {
        let mut out = vec![0x15];
        put_varint(&mut out, zigzag(2)); // field 1: DICTIONARY_PAGE
        for value in [Some(uncompressed), Some(compressed), crc].into_iter().flatten() {
            out.push(0x15); // the next field, an i32
            put_varint(&mut out, zigzag(value));
        }
        out.extend_from_slice(&[if crc.is_some() { 0x3C } else { 0x4C }, 0x15, 0x0A, 0x15, 0x00, 0x00, 0x00]);
        out
    }

    #[test]
    fn a_page_is_reframed_with_its_header_rewritten() {
        let content: Vec<u8> = (0..300_000u32).flat_map(|i| (i % 1000).to_le_bytes()).collect();
        let body = zstd::bulk::compress(&content, 3).unwrap();
        for crc in [None, Some(crc32fast::hash(&body) as i32)] {
            let mut page = header(content.len() as i32, body.len() as i32, crc);
            page.extend_from_slice(&body);
            let out = with_raw_zstd_body(&page).expect("reframed");
            let read = PageHeader::parse(&out).unwrap();
            let frame = &out[read.len..];
            assert_eq!(read.uncompressed.value as usize, content.len());
            assert_eq!(read.compressed.value as usize, frame.len());
            assert_eq!(read.crc.map(|c| c.value as u32), crc.map(|_| crc32fast::hash(frame)));
            assert_eq!(zstd::bulk::decompress(frame, content.len()).unwrap(), content);
            // The fields after the sizes (the dictionary page header) are as they were.
            let before = PageHeader::parse(&page).unwrap();
            assert_eq!(out[read.len - 7..read.len], page[before.len - 7..before.len]);
        }
    }

    #[test]
    fn a_page_whose_sizes_disagree_with_its_body_is_kept_as_stored() {
        let body = zstd::bulk::compress(&[7u8; 1000], 3).unwrap();
        let mut short = header(1000, body.len() as i32 + 1, None);
        short.extend_from_slice(&body);
        assert!(with_raw_zstd_body(&short).is_none(), "a body shorter than its header says");
        let mut wrong = header(999, body.len() as i32, None);
        wrong.extend_from_slice(&body);
        assert!(with_raw_zstd_body(&wrong).is_none(), "content larger than its header says");
        let mut garbage = header(1000, 4, None);
        garbage.extend_from_slice(&[1, 2, 3, 4]);
        assert!(with_raw_zstd_body(&garbage).is_none(), "not zstd");
    }

    #[test]
    fn a_truncated_or_unknown_header_is_not_reframed() {
        assert!(with_raw_zstd_body(&[]).is_none());
        assert!(with_raw_zstd_body(&[0x15]).is_none(), "a field cut short");
        assert!(with_raw_zstd_body(&[0x0D]).is_none(), "an unknown type");
        assert!(with_raw_zstd_body(&[0x00]).is_none(), "no sizes");
    }
}
