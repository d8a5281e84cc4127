//! Composite keys (and any single key type without a fast path) in arrow's row format:
//! each key becomes a byte string whose `memcmp` order is the column-by-column order.
//! The rows live only in memory; they are never spilled (the encoding may change
//! between arrow releases).

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::DataType;

use super::{canonical_nans, digest_past, tie_is_exact, KeyEncoder, KeyValues, SharedHead};
use crate::error::Result;

pub(crate) struct RowKeys {
    rows: Rows,
    /// The bytes all rows of the merge are expected to start with (see [`SharedHead`]).
    head: Arc<[u8]>,
}

impl KeyValues for RowKeys {
    fn len(&self) -> usize {
        self.rows.num_rows()
    }

    #[inline]
    fn compare(&self, i: usize, other: &Self, j: usize) -> Ordering {
        self.rows.row(i).cmp(&other.rows.row(j))
    }

    fn digest(&self, i: usize) -> u64 {
        digest_past(&self.head, self.rows.row(i).as_ref())
    }

    #[inline]
    fn tie_is_equal(digest: u64) -> bool {
        tie_is_exact(digest)
    }

    // Not BYTE_ORDERED, though a row's bytes compare as the row does: offset-value codes
    // are measured only on string and binary keys (benches/merge.rs); composite keys keep
    // the digest path until a bench shows codes pay for them.
}

/// One converter shared by every run, so that all rows of a merge are comparable.
pub(crate) struct RowEncoder {
    converter: RowConverter,
    head: SharedHead,
}

impl RowEncoder {
    pub(crate) fn new(types: &[DataType]) -> Result<Self> {
        let fields = types.iter().map(|t| SortField::new(t.clone())).collect();
        Ok(Self { converter: RowConverter::new(fields)?, head: SharedHead::default() })
    }
}

impl KeyEncoder for RowEncoder {
    type Values = RowKeys;

    fn encode(&self, columns: &[ArrayRef]) -> Result<Self::Values> {
        let rows = self.converter.convert_columns(&canonical_nans(columns))?;
        let head = self.head.learn(rows.iter().map(|row| row.data())).clone();
        Ok(RowKeys { rows, head })
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{Float64Array, Int32Array};
    use proptest::prelude::*;

    use super::super::primitive::tests::{float, java_compare_f64};
    use super::*;

    proptest! {
        /// A composite key with a float column orders as Java's comparator of the key
        /// row: the float by `Double.compare`, then the next column.
        #[test]
        fn float_columns_compare_as_java(keys in prop::collection::vec((float(), 0..3i32), 1..12)) {
            let encoder = RowEncoder::new(&[DataType::Float64, DataType::Int32]).unwrap();
            let floats: ArrayRef = Arc::new(Float64Array::from_iter_values(keys.iter().map(|k| k.0)));
            let ints: ArrayRef = Arc::new(Int32Array::from_iter_values(keys.iter().map(|k| k.1)));
            let rows = encoder.encode(&[floats, ints]).unwrap();
            for (i, a) in keys.iter().enumerate() {
                for (j, b) in keys.iter().enumerate() {
                    let java = java_compare_f64(a.0, b.0).then(a.1.cmp(&b.1));
                    prop_assert_eq!(rows.compare(i, &rows, j), java, "{:?} vs {:?}", a, b);
                }
            }
        }
    }
}
