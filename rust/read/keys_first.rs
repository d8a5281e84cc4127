//! Late materialization for a filter's narrow key range (a point lookup): of a file's
//! chosen rows, the first key column is decoded first, alone; the rows whose key lies in
//! the range are found in it, and only they are read of the other columns. A file whose
//! chosen rows hold no key of the range is left there, none of its other columns read
//! (no dictionary page decompressed, no page of theirs fetched).
//!
//! # Algorithm
//!
//! The file is sorted by key, so its rows in the range are consecutive: with `n` chosen
//! rows (a [`RowSelection`] over the file, its deleted rows skipped) and the key column
//! decoded over them, the rows in the range are the chosen rows `a..b`, where `a` counts
//! the keys below the range's lower bound and `b` those below its upper one (a binary
//! search in each decoded batch):
//!
//! ```text
//!   file rows   0 1 2 3 4 5 6 7 8 9
//!   chosen      . x x . x x x x . .      (n = 6 chosen rows; 0, 3, 8, 9 skipped)
//!   keys          3 5   5 6 8 9
//!   range [5, 8)    a=1       b=4        chosen rows 1..4: file rows 2, 4, 5
//! ```
//!
//! The narrowed selection is `chosen` with its first `a` and last `n - b` chosen rows
//! skipped too ([`RowSelection::and_then`]).
//!
//! It costs a second decode of the key column's pages in range when the other columns
//! are read; the reads of key-range slices ([`super::slices`]), whose rows are nearly all
//! in their range, do not use it.

use std::ops::Range;

use arrow_array::ArrayRef;
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};

use super::key_range::{first_not_below, KeyRange};
use crate::error::Result;

/// The positions among the chosen rows (in order, sorted by key) of those whose first
/// key column, decoded as `batches`, lies in `range`. Stops decoding at the first key
/// past the range.
pub(crate) fn chosen_rows_in_range(
    batches: impl Iterator<Item = Result<ArrayRef>>,
    range: &KeyRange,
) -> Result<Range<usize>> {
    let (mut seen, mut start) = (0, None);
    for keys in batches {
        let keys = keys?;
        let rows = keys.len();
        let lower = match (&range.lower, start) {
            (_, Some(_)) => 0,
            (Some(lower), None) => first_not_below(&keys, lower)?,
            (None, None) => 0,
        };
        if start.is_none() && lower < rows {
            start = Some(seen + lower);
        }
        if let Some(upper) = &range.upper {
            let end = first_not_below(&keys, upper)?;
            if end < rows {
                let start = start.unwrap_or(seen + rows);
                return Ok(start..(seen + end).max(start));
            }
        }
        seen += rows;
    }
    let start = start.unwrap_or(seen);
    Ok(start..seen)
}

/// `chosen` (a selection of a file's rows) keeping only its chosen rows `rows` (their
/// positions among the chosen ones); `None` when `rows` is empty.
pub(crate) fn narrowed(chosen: &RowSelection, rows: Range<usize>) -> Option<RowSelection> {
    if rows.is_empty() {
        return None;
    }
    let total = chosen.row_count();
    debug_assert!(rows.end <= total, "rows {rows:?} of {total} chosen rows");
    let mut selectors = vec![
        RowSelector::skip(rows.start),
        RowSelector::select(rows.len()),
        RowSelector::skip(total - rows.end),
    ];
    selectors.retain(|s| s.row_count > 0);
    Some(chosen.and_then(&selectors.into()))
}

/// `chosen` (a selection of a file of `rows` rows) keeping only the file rows `span`;
/// `None` when none is left. The rows a lookup cache's digests give
/// ([`super::lookup_cache`]) are file rows, deleted ones among them.
pub(crate) fn within(chosen: &RowSelection, span: Range<u64>, rows: u64) -> Option<RowSelection> {
    let span = span.start.min(rows) as usize..span.end.min(rows) as usize;
    let span = RowSelection::from_consecutive_ranges(std::iter::once(span), rows as usize);
    let kept = chosen.intersection(&span);
    kept.selects_any().then_some(kept)
}

/// The file rows from the first chosen one to the last, inclusive (empty: none chosen).
pub(crate) fn chosen_span(chosen: &RowSelection) -> Range<u64> {
    let (mut position, mut span) = (0u64, None::<Range<u64>>);
    for selector in chosen.iter() {
        let end = position + selector.row_count as u64;
        if !selector.skip && selector.row_count > 0 {
            span = Some(span.map_or(position, |s| s.start)..end);
        }
        position = end;
    }
    span.unwrap_or(0..0)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Array, Int64Array, StringArray};

    use super::*;

    fn ints(values: &[i64]) -> ArrayRef {
        Arc::new(Int64Array::from(values.to_vec()))
    }

    fn range(lower: Option<i64>, upper: Option<i64>) -> KeyRange {
        KeyRange { column: 0, lower: lower.map(|v| ints(&[v])), upper: upper.map(|v| ints(&[v])) }
    }

    /// The chosen rows in `range` of keys decoded in `pages` (each a batch).
    fn found(pages: &[&[i64]], range: &KeyRange) -> Range<usize> {
        chosen_rows_in_range(pages.iter().map(|p| Ok(ints(p))), range).unwrap()
    }

    /// The file rows a selection keeps.
    fn kept(selection: &RowSelection) -> Vec<u64> {
        let mut position = 0;
        let mut rows = Vec::new();
        for s in selection.iter() {
            if !s.skip {
                rows.extend(position..position + s.row_count as u64);
            }
            position += s.row_count as u64;
        }
        rows
    }

    fn selection(kept: &[u64], rows: u64) -> RowSelection {
        let ranges = kept.iter().map(|&r| r as usize..r as usize + 1);
        RowSelection::from_consecutive_ranges(ranges, rows as usize)
    }

    #[test]
    fn a_key_inside_one_page_is_found_there() {
        assert_eq!(found(&[&[1, 3], &[5, 7], &[9]], &range(Some(5), Some(6))), 2..3);
        assert_eq!(found(&[&[1, 3], &[5, 7], &[9]], &range(Some(7), Some(8))), 3..4);
    }

    #[test]
    fn a_key_across_a_page_boundary_keeps_its_rows_on_both_sides() {
        // The versions of a composite key's first column spread over three pages.
        assert_eq!(found(&[&[1, 4, 4], &[4, 4], &[4, 6]], &range(Some(4), Some(5))), 1..6);
        // The key starts a page exactly, and ends one exactly.
        assert_eq!(found(&[&[1, 3], &[4, 4], &[6]], &range(Some(4), Some(5))), 2..4);
        assert_eq!(found(&[&[1, 3], &[4, 4]], &range(Some(4), Some(5))), 2..4);
    }

    #[test]
    fn an_absent_key_finds_no_row() {
        for (lower, upper) in [(0, 1), (2, 3), (8, 9), (100, 101)] {
            let rows = found(&[&[1, 3], &[5, 7]], &range(Some(lower), Some(upper)));
            assert!(rows.is_empty(), "{lower}..{upper} found {rows:?}");
        }
        assert!(found(&[], &range(Some(1), Some(2))).is_empty());
        assert!(found(&[&[], &[]], &range(Some(1), Some(2))).is_empty());
    }

    #[test]
    fn an_empty_range_finds_no_row() {
        assert!(found(&[&[1, 3], &[5, 7]], &range(Some(5), Some(5))).is_empty());
        assert!(found(&[&[1, 3], &[5, 7]], &range(Some(6), Some(2))).is_empty());
    }

    #[test]
    fn all_keys_equal_are_all_found_or_none() {
        let pages: &[&[i64]] = &[&[4, 4, 4], &[4, 4], &[4]];
        assert_eq!(found(pages, &range(Some(4), Some(5))), 0..6);
        assert_eq!(found(pages, &range(None, Some(5))), 0..6);
        assert_eq!(found(pages, &range(Some(4), None)), 0..6);
        assert!(found(pages, &range(Some(5), Some(9))).is_empty());
        assert!(found(pages, &range(Some(0), Some(4))).is_empty());
    }

    #[test]
    fn unbounded_sides_reach_the_ends() {
        assert_eq!(found(&[&[1, 3], &[5, 7]], &range(None, Some(4))), 0..2);
        assert_eq!(found(&[&[1, 3], &[5, 7]], &range(Some(4), None)), 2..4);
        assert_eq!(found(&[&[1, 3], &[5, 7]], &range(None, None)), 0..4);
    }

    #[test]
    fn decoding_stops_past_the_range() {
        let mut decoded = 0;
        let pages: Vec<Result<ArrayRef>> = vec![Ok(ints(&[1, 2])), Ok(ints(&[3, 9])), Ok(ints(&[10]))];
        let batches = pages.into_iter().inspect(|_| decoded += 1);
        assert_eq!(chosen_rows_in_range(batches, &range(Some(2), Some(4))).unwrap(), 1..3);
        assert_eq!(decoded, 2, "the page after the first key past the range is not decoded");
    }

    #[test]
    fn string_keys_compare_as_strings() {
        let keys: ArrayRef = Arc::new(StringArray::from(vec!["a", "b", "b", "c"]));
        let bound = |s: &str| Some(Arc::new(StringArray::from(vec![s])) as ArrayRef);
        let range = KeyRange { column: 0, lower: bound("b"), upper: bound("b\0") };
        assert_eq!(chosen_rows_in_range([Ok(keys.clone())].into_iter(), &range).unwrap(), 1..3);
        assert_eq!(keys.len(), 4);
    }

    #[test]
    fn narrowing_keeps_the_chosen_rows_found_in_file_positions() {
        // The drawing of the module's documentation.
        let chosen = selection(&[1, 2, 4, 5, 6, 7], 10);
        assert_eq!(kept(&narrowed(&chosen, 1..4).unwrap()), [2, 4, 5]);
        assert_eq!(kept(&narrowed(&chosen, 0..6).unwrap()), [1, 2, 4, 5, 6, 7]);
        assert_eq!(kept(&narrowed(&chosen, 5..6).unwrap()), [7]);
        assert!(narrowed(&chosen, 3..3).is_none());
        let narrowed = narrowed(&chosen, 1..4).unwrap();
        assert_eq!(narrowed.row_count() + narrowed.skipped_row_count(), 10, "it spans the whole file");
    }

    #[test]
    fn within_keeps_the_chosen_rows_of_a_span_of_file_rows() {
        let chosen = selection(&[1, 2, 4, 5, 6, 7], 10);
        assert_eq!(kept(&within(&chosen, 2..6, 10).unwrap()), [2, 4, 5]);
        assert_eq!(kept(&within(&chosen, 0..10, 10).unwrap()), [1, 2, 4, 5, 6, 7]);
        assert!(within(&chosen, 3..4, 10).is_none(), "a deleted row only");
        assert!(within(&chosen, 8..10, 10).is_none());
        assert!(within(&chosen, 5..5, 10).is_none());
        let kept_rows = within(&chosen, 6..20, 10).unwrap();
        assert_eq!(kept_rows.row_count() + kept_rows.skipped_row_count(), 10, "it spans the whole file");
    }

    #[test]
    fn the_span_of_a_selection_runs_from_its_first_chosen_row_to_its_last() {
        assert_eq!(chosen_span(&selection(&[1, 2, 4, 5, 6, 7], 10)), 1..8);
        assert_eq!(chosen_span(&selection(&[9], 10)), 9..10);
        assert_eq!(chosen_span(&selection(&[], 10)), 0..0);
        assert_eq!(chosen_span(&RowSelection::from(vec![RowSelector::select(4)])), 0..4);
    }
}
