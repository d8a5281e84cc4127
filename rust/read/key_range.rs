//! A range of keys by their first column, and the comparison of key values with its
//! bounds: what a slice of a merge ([`super::slices`]) reads of each file
//! ([`super::files`]).

use std::cmp::Ordering;
use std::ops::Range;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_ord::ord::make_comparator;
use arrow_schema::SortOptions;

use crate::error::{MergeError, Result};

/// Rows whose key's first column is at least `lower` and below `upper` (each a one-value
/// array; `None`: unbounded).
#[derive(Debug)]
pub struct KeyRange {
    /// The first key column's index in the read's schema.
    pub column: usize,
    /// The least value in the range.
    pub lower: Option<ArrayRef>,
    /// The least value above the range.
    pub upper: Option<ArrayRef>,
}

impl KeyRange {
    /// The rows of `batch` (sorted by key) inside the range, and whether rows past its
    /// upper end follow them (then no later batch of the file can hold any of the range).
    pub fn rows_within(&self, batch: &RecordBatch) -> Result<(Range<usize>, bool)> {
        let column = batch.column(self.column);
        let rows = batch.num_rows();
        let start = match &self.lower {
            Some(lower) => first_not_below(column, lower)?,
            None => 0,
        };
        let end = match &self.upper {
            Some(upper) => first_not_below(column, upper)?,
            None => rows,
        };
        Ok((start..end.max(start), end < rows))
    }
}

/// The first row of `sorted` whose value is not below `bound`'s one value.
pub(crate) fn first_not_below(sorted: &ArrayRef, bound: &ArrayRef) -> Result<usize> {
    let compare = comparator(sorted.as_ref(), bound.as_ref())?;
    let (mut low, mut high) = (0, sorted.len());
    while low < high {
        let middle = low + (high - low) / 2;
        if compare(middle, 0) == Ordering::Less {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    Ok(low)
}

/// Compares a value of `left` with one of `right` (statistics or keys against a bound).
pub(crate) fn comparator(left: &dyn Array, right: &dyn Array) -> Result<arrow_ord::ord::DynComparator> {
    make_comparator(left, right, SortOptions::default())
        .map_err(|e| MergeError::Internal(format!("cannot compare key statistics: {e}")))
}
