//! Composite keys (and any single key type without a fast path) in arrow's row format:
//! each key becomes a byte string whose `memcmp` order is the column-by-column order.
//! The rows live only in memory; they are never spilled (the encoding may change
//! between arrow releases).

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::DataType;

use super::{byte_prefix, KeyEncoder, KeyValues};
use crate::error::Result;

pub(crate) struct RowKeys(Rows);

impl KeyValues for RowKeys {
    fn len(&self) -> usize {
        self.0.num_rows()
    }

    #[inline]
    fn compare(&self, i: usize, other: &Self, j: usize) -> Ordering {
        self.0.row(i).cmp(&other.0.row(j))
    }

    fn digest(&self, i: usize) -> u64 {
        byte_prefix(self.0.row(i).as_ref())
    }
}

/// One converter shared by every run, so that all rows of a merge are comparable.
pub(crate) struct RowEncoder(Arc<RowConverter>);

impl RowEncoder {
    pub(crate) fn new(types: &[DataType]) -> Result<Self> {
        let fields = types.iter().map(|t| SortField::new(t.clone())).collect();
        Ok(Self(Arc::new(RowConverter::new(fields)?)))
    }
}

impl KeyEncoder for RowEncoder {
    type Values = RowKeys;

    fn encode(&self, columns: &[ArrayRef]) -> Result<Self::Values> {
        Ok(RowKeys(self.0.convert_columns(columns)?))
    }
}
