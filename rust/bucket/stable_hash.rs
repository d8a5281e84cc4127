//! The bucket of a key: a stable hash of the key's values, modulo the number of buckets.
//!
//! The hash is part of a table's on-disk format (every write must send a key to the same
//! bucket), so it is defined on values, not on arrow's in-memory layouts or a library's
//! hasher: integers of every width (and dates, times, timestamps, durations) hash as
//! their value widened to 64 bits, so a key keeps its bucket when its type widens; floats
//! as the bits of their `f64` value (-0.0 as 0.0, every NaN as one NaN); decimals as 16
//! little-endian bytes; strings and binaries of every layout as their length and bytes;
//! booleans as 0 or 1. Columns of a composite key are hashed one after the other.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, UInt32Array};
use arrow_buffer::ArrowNativeType;
use arrow_schema::DataType;

use crate::error::{invalid, Result};

const SEED: u64 = 0x6d65_7267_652d_636f; // "merge-co"
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// The bucket in `0..buckets` of each row's key; `names` name the key columns in errors.
pub fn bucket_ids(columns: &[ArrayRef], names: &[String], buckets: u32) -> Result<UInt32Array> {
    if buckets == 0 {
        return Err(invalid!("the number of buckets must be at least 1"));
    }
    let rows = columns.first().map_or(0, |c| c.len());
    let mut hashes = vec![SEED; rows];
    for (column, name) in columns.iter().zip(names) {
        if let Some(row) = crate::runs::version::first_null(column.as_ref()) {
            return Err(invalid!("key column '{name}' has a null at row {row}"));
        }
        hash_column(column.as_ref(), name, &mut hashes)?;
    }
    Ok(hashes.into_iter().map(|h| (finish(h) % u64::from(buckets)) as u32).collect())
}

/// Folds each value of `column` into its row's running hash.
fn hash_column(column: &dyn Array, name: &str, hashes: &mut [u64]) -> Result<()> {
    use DataType::*;
    match column.data_type() {
        Boolean => fold(hashes, column.as_boolean().values().iter(), u64::from),
        Int8 => fold_primitive::<Int8Type>(column, hashes, |v| v as u64),
        Int16 => fold_primitive::<Int16Type>(column, hashes, |v| v as u64),
        Int32 | Date32 | Time32(_) => fold_raw::<i32>(column, hashes, |v| v as i64 as u64),
        Int64 | Date64 | Time64(_) | Timestamp(_, _) | Duration(_) => {
            fold_raw::<i64>(column, hashes, |v| v as u64)
        }
        UInt8 => fold_primitive::<UInt8Type>(column, hashes, u64::from),
        UInt16 => fold_primitive::<UInt16Type>(column, hashes, u64::from),
        UInt32 => fold_primitive::<UInt32Type>(column, hashes, u64::from),
        UInt64 => fold_primitive::<UInt64Type>(column, hashes, |v| v),
        Float32 => fold_primitive::<Float32Type>(column, hashes, |v| float_bits(f64::from(v))),
        Float64 => fold_primitive::<Float64Type>(column, hashes, float_bits),
        Decimal128(_, _) => {
            for (h, v) in hashes.iter_mut().zip(column.as_primitive::<Decimal128Type>().values()) {
                *h = mix_bytes(*h, &v.to_le_bytes());
            }
        }
        Utf8 => fold_bytes(hashes, column.as_string::<i32>().iter().map(|v| v.unwrap_or("").as_bytes())),
        LargeUtf8 => fold_bytes(hashes, column.as_string::<i64>().iter().map(|v| v.unwrap_or("").as_bytes())),
        Utf8View => fold_bytes(hashes, column.as_string_view().iter().map(|v| v.unwrap_or("").as_bytes())),
        Binary => fold_bytes(hashes, column.as_binary::<i32>().iter().map(|v| v.unwrap_or(&[]))),
        LargeBinary => fold_bytes(hashes, column.as_binary::<i64>().iter().map(|v| v.unwrap_or(&[]))),
        BinaryView => fold_bytes(hashes, column.as_binary_view().iter().map(|v| v.unwrap_or(&[]))),
        FixedSizeBinary(_) => {
            fold_bytes(hashes, column.as_fixed_size_binary().iter().map(|v| v.unwrap_or(&[])))
        }
        other => return Err(invalid!("key column '{name}' has type {other}, which cannot be bucketed")),
    }
    Ok(())
}

/// The values of a primitive column whatever its logical type (dates, times and
/// timestamps share the layout of their integer type).
fn fold_raw<N: ArrowNativeType>(column: &dyn Array, hashes: &mut [u64], word: impl Fn(N) -> u64) {
    let data = column.to_data();
    let values = &data.buffers()[0].typed_data::<N>()[data.offset()..][..data.len()];
    fold(hashes, values.iter().copied(), word);
}

fn fold_primitive<T: ArrowPrimitiveType>(
    column: &dyn Array,
    hashes: &mut [u64],
    word: impl Fn(T::Native) -> u64,
) {
    fold(hashes, column.as_primitive::<T>().values().iter().copied(), word);
}

fn fold<V>(hashes: &mut [u64], values: impl Iterator<Item = V>, word: impl Fn(V) -> u64) {
    for (h, v) in hashes.iter_mut().zip(values) {
        *h = mix(*h, word(v));
    }
}

fn fold_bytes<'a>(hashes: &mut [u64], values: impl Iterator<Item = &'a [u8]>) {
    for (h, v) in hashes.iter_mut().zip(values) {
        *h = mix_bytes(*h, v);
    }
}

fn float_bits(v: f64) -> u64 {
    if v.is_nan() {
        f64::NAN.to_bits()
    } else {
        (v + 0.0).to_bits() // -0.0 + 0.0 == +0.0
    }
}

fn mix(h: u64, word: u64) -> u64 {
    (h.rotate_left(5) ^ word).wrapping_mul(MULTIPLIER)
}

fn mix_bytes(mut h: u64, bytes: &[u8]) -> u64 {
    h = mix(h, bytes.len() as u64);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        h = mix(h, u64::from_le_bytes(chunk.try_into().expect("8-byte chunk")));
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    mix(h, u64::from_le_bytes(tail))
}

/// Murmur3's 64-bit finaliser: spreads every input bit over the low bits used by `%`.
fn finish(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, Int64Array, StringArray, StringViewArray};

    use super::*;

    fn ids(column: ArrayRef, buckets: u32) -> Vec<u32> {
        bucket_ids(&[column], &["k".to_string()], buckets).unwrap().values().to_vec()
    }

    #[test]
    fn widths_and_layouts_agree() {
        let values: Vec<i64> = (-500..500).collect();
        let narrow: Vec<i32> = values.iter().map(|&v| v as i32).collect();
        assert_eq!(ids(Arc::new(Int64Array::from(values)), 7), ids(Arc::new(Int32Array::from(narrow)), 7));
        let words: Vec<String> = (0..300).map(|i| format!("key-{i}-{}", "x".repeat(i % 20))).collect();
        let utf8 = ids(Arc::new(StringArray::from(words.clone())), 8);
        assert_eq!(utf8, ids(Arc::new(StringViewArray::from(words)), 8));
    }

    #[test]
    fn spreads_keys_evenly() {
        let keys: Vec<String> = (0..80_000).map(|i| format!("{i:08x}")).collect();
        let mut counts = [0u32; 8];
        for b in ids(Arc::new(StringArray::from(keys)), 8) {
            counts[b as usize] += 1;
        }
        // Each bucket expects 10_000; a fair hash stays well within 5%.
        assert!(counts.iter().all(|&c| (9_500..=10_500).contains(&c)), "{counts:?}");
    }

    #[test]
    fn sliced_columns_hash_their_own_rows() {
        let full: ArrayRef = Arc::new(Int32Array::from((0..100).collect::<Vec<_>>()));
        let tail = full.slice(40, 60);
        assert_eq!(ids(tail, 13), ids(full, 13)[40..].to_vec());
    }

    #[test]
    fn null_keys_and_zero_buckets_are_refused() {
        let with_null: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None]));
        assert!(bucket_ids(&[with_null], &["k".into()], 4).is_err());
        let fine: ArrayRef = Arc::new(Int64Array::from(vec![1]));
        assert!(bucket_ids(&[fine], &["k".into()], 0).is_err());
    }
}
