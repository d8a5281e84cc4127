//! Paimon's bucket function: a key's bucket is the Murmur3 hash (seed 42) of the key
//! encoded as Paimon's `BinaryRow`, modulo the number of buckets, as Java computes it,
//! so that merge-core and Paimon's writers send every key to the same bucket.
//!
//! A `BinaryRow` of `n` fields is a header of `((n + 63 + 8) / 64) * 8` bytes (the row
//! kind in byte 0, then one null bit per field), one little-endian 8-byte slot per field,
//! then a variable part in 8-byte chunks. Its hash covers every byte, so unused bytes must
//! be zero, exactly as Java leaves them.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, Int32Array};
use arrow_schema::{DataType, TimeUnit};

use crate::error::{invalid, Result};

/// The Paimon bucket (`0..buckets`) of each row whose bucket key is `columns`; `names`
/// name the columns in errors. Nulls hash as Paimon hashes them (a null bit).
pub fn paimon_bucket_ids(columns: &[ArrayRef], names: &[String], buckets: i32) -> Result<Int32Array> {
    if buckets < 1 {
        return Err(invalid!("the number of buckets must be at least 1, got {buckets}"));
    }
    Ok(paimon_row_hashes(columns, names)?.unary::<_, Int32Type>(|hash| (hash % buckets).abs()))
}

/// Java's `BinaryRow.hashCode` of each row of `columns` (the Murmur3 hash Paimon buckets
/// by): a dynamic-bucket table's index files hold these hashes of the trimmed primary key.
pub fn paimon_row_hashes(columns: &[ArrayRef], names: &[String]) -> Result<Int32Array> {
    for (column, name) in columns.iter().zip(names) {
        if !encodable(column.data_type()) {
            return Err(invalid!(
                "bucket key column '{name}' has type {}, which Paimon cannot bucket",
                column.data_type()
            ));
        }
    }
    let rows = columns.first().map_or(0, |c| c.len());
    let mut row = RowWriter::new(columns.len());
    Ok((0..rows)
        .map(|i| {
            row.reset();
            for (field, column) in columns.iter().enumerate() {
                row.write(field, column.as_ref(), i);
            }
            murmur3_words(row.bytes(), 42)
        })
        .collect())
}

fn encodable(data_type: &DataType) -> bool {
    use DataType::*;
    matches!(
        data_type,
        Boolean
            | Int8
            | Int16
            | Int32
            | Int64
            | Float32
            | Float64
            | Date32
            | Time32(_)
            | Utf8
            | LargeUtf8
            | Utf8View
            | Binary
            | LargeBinary
            | BinaryView
            | Decimal128(_, _)
            | Timestamp(_, _)
    )
}

/// One `BinaryRow` at a time, in a buffer reused from row to row.
struct RowWriter {
    arity: usize,
    header: usize,
    buffer: Vec<u8>,
}

impl RowWriter {
    fn new(arity: usize) -> Self {
        let header = (arity + 63 + 8) / 64 * 8;
        Self { arity, header, buffer: Vec::new() }
    }

    fn reset(&mut self) {
        self.buffer.clear();
        self.buffer.resize(self.header + 8 * self.arity, 0);
    }

    fn bytes(&self) -> &[u8] {
        &self.buffer
    }

    fn slot(&mut self, field: usize) -> &mut [u8] {
        let at = self.header + 8 * field;
        &mut self.buffer[at..at + 8]
    }

    fn set_slot(&mut self, field: usize, bytes: &[u8]) {
        self.slot(field)[..bytes.len()].copy_from_slice(bytes);
    }

    /// Appends `bytes` to the variable part, zero-padded to 8 bytes; returns its offset.
    fn append(&mut self, bytes: &[u8], reserve: usize) -> u64 {
        let offset = self.buffer.len();
        let padded = reserve.max(bytes.len()).div_ceil(8) * 8;
        self.buffer.resize(offset + padded, 0);
        self.buffer[offset..offset + bytes.len()].copy_from_slice(bytes);
        offset as u64
    }

    fn write_bytes(&mut self, field: usize, bytes: &[u8]) {
        if bytes.len() <= 7 {
            self.set_slot(field, bytes);
            self.slot(field)[7] = 0x80 | bytes.len() as u8;
        } else {
            let offset = self.append(bytes, 0);
            self.set_slot(field, &((offset << 32) | bytes.len() as u64).to_le_bytes());
        }
    }

    fn write(&mut self, field: usize, column: &dyn Array, i: usize) {
        use DataType::*;
        if column.is_null(i) {
            let bit = field + 8;
            self.buffer[bit / 8] |= 1 << (bit % 8);
            return;
        }
        match column.data_type() {
            Boolean => self.set_slot(field, &[u8::from(column.as_boolean().value(i))]),
            Int8 => self.set_slot(field, &column.as_primitive::<Int8Type>().value(i).to_le_bytes()),
            Int16 => self.set_slot(field, &column.as_primitive::<Int16Type>().value(i).to_le_bytes()),
            Int32 => self.set_slot(field, &column.as_primitive::<Int32Type>().value(i).to_le_bytes()),
            Date32 => self.set_slot(field, &column.as_primitive::<Date32Type>().value(i).to_le_bytes()),
            Time32(TimeUnit::Second) => {
                let millis = column.as_primitive::<Time32SecondType>().value(i) * 1000;
                self.set_slot(field, &millis.to_le_bytes())
            }
            Time32(_) => {
                self.set_slot(field, &column.as_primitive::<Time32MillisecondType>().value(i).to_le_bytes())
            }
            Int64 => self.set_slot(field, &column.as_primitive::<Int64Type>().value(i).to_le_bytes()),
            Float32 => self.set_slot(field, &column.as_primitive::<Float32Type>().value(i).to_le_bytes()),
            Float64 => self.set_slot(field, &column.as_primitive::<Float64Type>().value(i).to_le_bytes()),
            Utf8 => self.write_bytes(field, column.as_string::<i32>().value(i).as_bytes()),
            LargeUtf8 => self.write_bytes(field, column.as_string::<i64>().value(i).as_bytes()),
            Utf8View => self.write_bytes(field, column.as_string_view().value(i).as_bytes()),
            Binary => self.write_bytes(field, column.as_binary::<i32>().value(i)),
            LargeBinary => self.write_bytes(field, column.as_binary::<i64>().value(i)),
            BinaryView => self.write_bytes(field, column.as_binary_view().value(i)),
            Decimal128(precision, _) => {
                let unscaled = column.as_primitive::<Decimal128Type>().value(i);
                if *precision <= 18 {
                    self.set_slot(field, &(unscaled as i64).to_le_bytes());
                } else {
                    let bytes = minimal_big_endian(unscaled);
                    let offset = self.append(&bytes, 16);
                    self.set_slot(field, &((offset << 32) | bytes.len() as u64).to_le_bytes());
                }
            }
            Timestamp(unit, _) => {
                let (millis, nanos) = millis_and_nanos(column, *unit, i);
                if matches!(unit, TimeUnit::Second | TimeUnit::Millisecond) {
                    self.set_slot(field, &millis.to_le_bytes());
                } else {
                    let offset = self.append(&millis.to_le_bytes(), 8);
                    self.set_slot(field, &((offset << 32) | nanos as u64).to_le_bytes());
                }
            }
            other => unreachable!("type {other} passed `encodable`"),
        }
    }
}

/// A timestamp as Paimon holds it: epoch milliseconds and the nanoseconds within that
/// millisecond (both floored, so instants before 1970 keep a non-negative remainder).
fn millis_and_nanos(column: &dyn Array, unit: TimeUnit, i: usize) -> (i64, i64) {
    match unit {
        TimeUnit::Second => (column.as_primitive::<TimestampSecondType>().value(i) * 1000, 0),
        TimeUnit::Millisecond => (column.as_primitive::<TimestampMillisecondType>().value(i), 0),
        TimeUnit::Microsecond => {
            let v = column.as_primitive::<TimestampMicrosecondType>().value(i);
            (v.div_euclid(1000), v.rem_euclid(1000) * 1000)
        }
        TimeUnit::Nanosecond => {
            let v = column.as_primitive::<TimestampNanosecondType>().value(i);
            (v.div_euclid(1_000_000), v.rem_euclid(1_000_000))
        }
    }
}

/// Java's `BigInteger.toByteArray`: big-endian two's complement in the fewest bytes.
fn minimal_big_endian(value: i128) -> Vec<u8> {
    let bytes = value.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (head, next) = (bytes[start], bytes[start + 1]);
        let redundant = (head == 0 && next & 0x80 == 0) || (head == 0xff && next & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    bytes[start..].to_vec()
}

/// Murmur3 x86 32-bit over 4-byte little-endian words (a `BinaryRow` is always a whole
/// number of words), as Paimon's `MurmurHashUtils.hashBytesByWords`.
fn murmur3_words(bytes: &[u8], seed: u32) -> i32 {
    let mut h = seed;
    for word in bytes.chunks_exact(4) {
        let mut k = u32::from_le_bytes(word.try_into().expect("4-byte word"));
        k = k.wrapping_mul(0xcc9e_2d51).rotate_left(15).wrapping_mul(0x1b87_3593);
        h = (h ^ k).rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    h ^= bytes.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    (h ^ (h >> 16)) as i32
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, StringArray};

    use super::*;

    fn hash_of(column: ArrayRef) -> Vec<i32> {
        let mut row = RowWriter::new(1);
        (0..column.len())
            .map(|i| {
                row.reset();
                row.write(0, column.as_ref(), i);
                murmur3_words(row.bytes(), 42)
            })
            .collect()
    }

    // Hashes of one-column keys as Java's BinaryRow.hashCode gives them.
    #[test]
    fn hashes_match_paimon() {
        let ints = Arc::new(Int32Array::from(vec![Some(0), Some(1), Some(-1), Some(i32::MAX), None]));
        assert_eq!(hash_of(ints), vec![-300363099, 1465514398, 1133687267, -1125657321, -1748325344]);
        let longs = Arc::new(Int64Array::from(vec![1, -1, 4294967296]));
        assert_eq!(hash_of(longs), vec![1465514398, -821098432, 231812234]);
        let words = ["", "a", "Alice", "abcdefg", "abcdefgh", "hello world"];
        let strings = Arc::new(StringArray::from(words.to_vec()));
        assert_eq!(
            hash_of(strings),
            vec![302122119, 943281246, 1285337400, -1431907323, -843760178, 161593394]
        );
    }

    #[test]
    fn two_column_key_and_buckets() {
        let names = ["f0".to_string(), "f2".to_string()];
        let columns: Vec<ArrayRef> =
            vec![Arc::new(StringArray::from(vec!["Alice"])), Arc::new(Int32Array::from(vec![1]))];
        let mut row = RowWriter::new(2);
        row.reset();
        row.write(0, columns[0].as_ref(), 0);
        row.write(1, columns[1].as_ref(), 0);
        assert_eq!(murmur3_words(row.bytes(), 42), 1519508418);
        assert_eq!(paimon_bucket_ids(&columns, &names, 4).unwrap().values().to_vec(), vec![2]);
        assert_eq!(paimon_row_hashes(&columns, &names).unwrap().values().to_vec(), vec![1519508418]);
        let ints: ArrayRef = Arc::new(Int32Array::from((0..11).collect::<Vec<_>>()));
        let ids = paimon_bucket_ids(&[ints], &names[..1], 5).unwrap();
        assert_eq!(ids.values().to_vec(), vec![4, 3, 4, 0, 1, 1, 3, 1, 1, 0, 4]);
    }

    #[test]
    fn big_decimals_are_minimal_two_complement() {
        assert_eq!(minimal_big_endian(0), vec![0]);
        assert_eq!(minimal_big_endian(127), vec![0x7f]);
        assert_eq!(minimal_big_endian(128), vec![0x00, 0x80]);
        assert_eq!(minimal_big_endian(-1), vec![0xff]);
        assert_eq!(minimal_big_endian(-129), vec![0xff, 0x7f]);
    }
}
