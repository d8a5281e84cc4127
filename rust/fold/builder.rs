//! Assembles output batches. The fold decides, for each output row, where every value
//! comes from; the builder gathers each column of a whole batch at once with arrow's
//! `interleave`, so no stored value is ever copied row by row.
//!
//! Each output column has a [`Sink`]:
//! - `Whole`: the value of the output row's source row (keys; every column of a
//!   deduplicated or first-row merge);
//! - `Gather`: a row of its own per output row (first/min/max, sequence columns); the
//!   store's null row stands for a null result;
//! - `Newest`: the newest usable value among the output row's *candidates* (the key's
//!   versions, handed over once per row). Picked for every such column in one pass
//!   over the candidates when the batch is built, so a fold of many such columns
//!   (partial-update, last_non_null_value) costs one hand-over per key instead of one
//!   search per column, and a key's single add is every column's pick without a look
//!   at its nulls. A fold that decides a row's value itself (the general path) fixes it
//!   instead;
//! - `Computed`: a value the fold computed (sum, product, listagg, bool_and/or);
//! - `Items`: lists or maps assembled from stored elements or entries (collect, merge_map);
//! - `RowKind`: the output row kind, written in the input's representation;
//! - `Unused`: a column the output leaves out (a read's projection), never built.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, LargeListArray, ListArray, MapArray, RecordBatch};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, SchemaRef};
use arrow_select::interleave::interleave;

use super::accumulator::{nested_values, Acc, Cx};
use crate::error::{invalid, MergeError, Result};
use crate::runs::store::{BatchStore, RowRef};
use crate::runs::value::Computed;
use crate::runs::version::{row_kind_array, RowKind};

/// How a `Newest` column picks among an output row's candidates (oldest first).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewestRule {
    /// The column's position among the store's views.
    pub slot: usize,
    /// Nulls are passed over (`last_non_null_value`, partial-update), not taken.
    pub skip_nulls: bool,
    /// Retracts are passed over; otherwise the newest retract counted makes the value null.
    pub skip_retracts: bool,
}

/// A pending row as `interleave` takes it: (stored batch, row). Kept in this form from
/// the start, so building a batch hands over a slice instead of converting every index.
type Index = (usize, usize);

fn index(row: RowRef) -> Index {
    (row.batch as usize, row.row as usize)
}

pub(crate) enum Sink {
    Whole,
    Gather(Vec<Index>),
    /// `fixed`: rows whose value the fold decided, as (pending row, source row).
    Newest {
        rule: NewestRule,
        fixed: Vec<(usize, Index)>,
    },
    Computed(Computed),
    Items(Items),
    RowKind,
    Unused,
}

impl Sink {
    pub(crate) fn newest(rule: NewestRule) -> Self {
        Self::Newest { rule, fixed: Vec::new() }
    }
}

/// The lists or maps of pending rows, as child indices (stored batch, index into the
/// column's child array); `None` for a null.
#[derive(Default)]
pub(crate) struct Items {
    rows: Vec<Option<Vec<Index>>>,
}

/// The columns a merge outputs: those asked for, or all.
#[derive(Clone)]
pub(crate) struct OutputColumns {
    /// Every column of the merge (see `plan::output_schema`).
    pub merged: SchemaRef,
    /// The output's columns, as positions in `merged`.
    pub projection: Vec<usize>,
    /// The output's schema.
    pub schema: SchemaRef,
}

impl OutputColumns {
    /// Every column of `merged`.
    pub(crate) fn all(merged: SchemaRef) -> Self {
        Self { projection: (0..merged.fields().len()).collect(), schema: merged.clone(), merged }
    }

    /// The `columns` of `merged`, in this order (all when `None`).
    pub(crate) fn select(merged: SchemaRef, columns: Option<&[String]>) -> Result<Self> {
        let Some(names) = columns else { return Ok(Self::all(merged)) };
        let position =
            |name: &String| merged.index_of(name).map_err(|_| invalid!("no column '{name}' to read"));
        let projection = names.iter().map(position).collect::<Result<Vec<_>>>()?;
        let schema = Arc::new(merged.project(&projection)?);
        Ok(Self { merged, projection, schema })
    }
}

pub(crate) struct OutputBuilder {
    columns: OutputColumns,
    /// Each output row's source row (for `Whole` columns).
    rows: Vec<Index>,
    kinds: Vec<RowKind>,
    sinks: Vec<Sink>,
    /// The candidates of every pending row, row after row, for `Newest` columns.
    candidates: Vec<Index>,
    /// Where each pending row's candidates end in `candidates` (kept only if some
    /// column is `Newest`).
    candidate_ends: Vec<usize>,
    any_newest: bool,
}

impl OutputBuilder {
    /// A builder of `columns`, filled as `sinks` (one per merged column) say. A column
    /// left out is not built, unless the fold computes it (it is dropped then).
    pub(crate) fn new(columns: OutputColumns, mut sinks: Vec<Sink>) -> Self {
        for (c, sink) in sinks.iter_mut().enumerate() {
            if !columns.projection.contains(&c) && !matches!(sink, Sink::Computed(_)) {
                *sink = Sink::Unused;
            }
        }
        let any_newest = sinks.iter().any(|s| matches!(s, Sink::Newest { .. }));
        Self {
            columns,
            rows: Vec::new(),
            kinds: Vec::new(),
            sinks,
            candidates: Vec::new(),
            candidate_ends: Vec::new(),
            any_newest,
        }
    }

    /// Starts an output row whose `Whole` columns come from `row`. The caller then fills
    /// every `Gather` and `Computed` sink once.
    #[inline]
    pub(crate) fn push(&mut self, row: RowRef, kind: RowKind) {
        self.rows.push(index(row));
        self.kinds.push(kind);
        if self.any_newest {
            self.candidate_ends.push(self.candidates.len());
        }
    }

    /// Gives the current row the candidates its `Newest` columns pick from (oldest first);
    /// nothing to do without such columns.
    #[inline]
    pub(crate) fn candidates(&mut self, rows: &[RowRef]) {
        if !self.any_newest {
            return;
        }
        self.candidates.extend(rows.iter().map(|&r| index(r)));
        *self.candidate_ends.last_mut().expect("a row was pushed") = self.candidates.len();
    }

    /// Sets the current row's value of `Gather` column `column` to that of `row`.
    #[inline]
    pub(crate) fn gather(&mut self, column: usize, row: RowRef) {
        if let Sink::Gather(rows) = &mut self.sinks[column] {
            rows.push(index(row));
        }
    }

    /// The buffer of `Computed` column `column`.
    #[inline]
    pub(crate) fn computed(&mut self, column: usize) -> &mut Computed {
        match &mut self.sinks[column] {
            Sink::Computed(values) => values,
            _ => panic!("column {column} is not computed"),
        }
    }

    /// Sets the current row's value of value column `cx.column` to what `acc` holds.
    pub(crate) fn set(&mut self, acc: &Acc, cx: &Cx, store: &BatchStore) -> Result<()> {
        let pending = self.rows.len() - 1;
        let row = |acc: &Acc| match acc {
            Acc::Row(r) => Ok(index(*r)),
            Acc::Null => Ok(index(store.null_row())),
            other => Err(MergeError::Internal(format!("a picked column got a computed value {other:?}"))),
        };
        match &mut self.sinks[cx.column] {
            Sink::Gather(rows) => rows.push(row(acc)?),
            Sink::Newest { fixed, .. } => fixed.push((pending, row(acc)?)),
            Sink::Computed(values) => values.push_value(cx.value(acc)),
            Sink::Items(items) => items
                .rows
                .push(cx.items(acc).map(|v| v.into_iter().map(|(b, i)| (b as usize, i as usize)).collect())),
            Sink::Whole | Sink::RowKind | Sink::Unused => {}
        }
        Ok(())
    }

    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// How many of the first `n` pending rows fit one batch: a string or binary column
    /// holds at most `i32::MAX` bytes (its offsets are 32-bit). Counted only for a column
    /// whose stored batches together could exceed that; a `Newest` column is counted at
    /// each row's largest candidate, an upper bound. At least one row.
    pub(crate) fn rows_that_fit(&self, n: usize, store: &BatchStore) -> usize {
        let mut fit = n;
        for (c, sink) in self.sinks.iter().enumerate() {
            let column_bytes =
                |batch: usize, row: usize| byte_length(store.get(batch as u32).batch.column(c), row);
            let lengths: Box<dyn Iterator<Item = usize> + '_> = match sink {
                Sink::Computed(values) if values.is_text() => Box::new(values.text_bytes(n)),
                _ if !is_narrow_bytes(self.columns.merged.field(c).data_type()) => continue,
                _ if store.batches().map(|b| value_bytes(b.batch.column(c))).sum::<usize>() <= MAX_BYTES => {
                    continue
                }
                Sink::Whole => Box::new(self.rows[..n].iter().map(move |&(b, r)| column_bytes(b, r))),
                Sink::Gather(rows) => Box::new(rows[..n].iter().map(move |&(b, r)| column_bytes(b, r))),
                Sink::Newest { .. } => {
                    let mut start = 0;
                    Box::new(self.candidate_ends[..n].iter().map(move |&end| {
                        let most = self.candidates[start..end].iter().map(|&(b, r)| column_bytes(b, r)).max();
                        start = end;
                        most.unwrap_or(0)
                    }))
                }
                _ => continue,
            };
            let mut total = 0usize;
            let fits = lengths.take_while(|&len| {
                total += len;
                total <= MAX_BYTES
            });
            fit = fit.min(fits.count());
        }
        fit.max(1)
    }

    /// Builds a batch of the first `n` pending rows.
    pub(crate) fn build(&mut self, n: usize, store: &BatchStore) -> Result<RecordBatch> {
        let (whole, kinds) = (&self.rows[..n], &self.kinds[..n]);
        let rules: Vec<NewestRule> = self
            .sinks
            .iter()
            .filter_map(|sink| match sink {
                Sink::Newest { rule, .. } => Some(*rule),
                _ => None,
            })
            .collect();
        // Candidates are kept only when some column is `Newest`.
        let picks = match rules.is_empty() {
            true => Vec::new(),
            false => pick_newest(store, &rules, &self.candidates, &self.candidate_ends[..n]),
        };
        let mut newest = picks.into_iter();
        let built = self
            .sinks
            .iter_mut()
            .enumerate()
            .map(|(c, sink)| -> Result<Option<ArrayRef>> {
                let data_type = self.columns.merged.field(c).data_type();
                let column = match sink {
                    Sink::Whole => gather(store, c, whole)?,
                    Sink::Gather(rows) => {
                        let column = gather(store, c, &rows[..n]);
                        rows.drain(..n);
                        column?
                    }
                    Sink::Newest { fixed, .. } => {
                        let mut picked = newest.next().expect("a pick for every newest column");
                        let built = fixed.iter().take_while(|(row, _)| *row < n).count();
                        for (row, source) in fixed.drain(..built) {
                            picked[row] = source;
                        }
                        fixed.iter_mut().for_each(|(row, _)| *row -= n);
                        gather(store, c, &picked)?
                    }
                    Sink::Items(items) => {
                        let column = build_items(store, c, data_type, &items.rows[..n]);
                        items.rows.drain(..n);
                        column?
                    }
                    Sink::RowKind => row_kind_array(data_type, kinds),
                    Sink::Computed(values) => values.finish(data_type, n)?,
                    Sink::Unused => return Ok(None),
                };
                Ok(Some(column))
            })
            .collect::<Result<Vec<_>>>()?;
        let projection = self.columns.projection.iter();
        let columns = projection.map(|&c| built[c].clone().expect("projected columns are built")).collect();
        self.rows.drain(..n);
        self.kinds.drain(..n);
        if self.any_newest {
            let used = self.candidate_ends[n - 1];
            self.candidates.drain(..used);
            self.candidate_ends.drain(..n);
            self.candidate_ends.iter_mut().for_each(|end| *end -= used);
        }
        Ok(RecordBatch::try_new(self.columns.schema.clone(), columns)?)
    }

    /// Marks the stored batches that pending rows point into.
    pub(crate) fn mark_live(&self, live: &mut [bool]) {
        for &(batch, _) in self.pending() {
            live[batch] = true;
        }
    }

    fn pending(&self) -> impl Iterator<Item = &Index> {
        let held = self.sinks.iter().flat_map(|sink| -> Box<dyn Iterator<Item = &Index> + '_> {
            match sink {
                Sink::Gather(rows) => Box::new(rows.iter()),
                Sink::Newest { fixed, .. } => Box::new(fixed.iter().map(|(_, source)| source)),
                Sink::Items(items) => Box::new(items.rows.iter().flatten().flatten()),
                _ => Box::new(std::iter::empty()),
            }
        });
        self.rows.iter().chain(&self.candidates).chain(held)
    }
}

/// For each rule (a column) and each row (its candidates end at `ends[i]`), the newest
/// candidate the rule accepts, or the null row: Paimon's last_value /
/// last_non_null_value, read from the newest end. The newest counted version decides; a
/// retract there clears the value, and a skipped null neither sets nor clears it. A row
/// whose only candidate is an add picks it in every column, also where its value is a
/// null the rule would skip: the pick is null either way. All columns are picked in one
/// pass over the candidates, each stored batch's null bits and row kinds looked up once
/// per batch built.
fn pick_newest(
    store: &BatchStore,
    rules: &[NewestRule],
    candidates: &[Index],
    ends: &[usize],
) -> Vec<Vec<Index>> {
    let mut picked: Vec<Vec<Index>> = rules.iter().map(|_| Vec::with_capacity(ends.len())).collect();
    let null = index(store.null_row());
    // Per stored batch: its row kinds (if some row retracts), then each rule's null bits,
    // `None` where the batch has no views (the null row: null everywhere). A released
    // slot is never read: no candidate points there.
    let mut kinds = Vec::with_capacity(store.len());
    let mut nulls = Vec::with_capacity(store.len() * rules.len());
    for id in 0..store.len() as u32 {
        let stored = store.slot(id);
        kinds.push(stored.and_then(|s| s.versions.kinds_with_retracts()));
        let views = stored.map_or(&[][..], |s| &s.views[..]);
        nulls.extend(rules.iter().map(|rule| views.get(rule.slot).map(|v| v.nulls())));
    }
    let is_retract = |(batch, row): Index| kinds[batch].is_some_and(|k: &[RowKind]| k[row].is_retract());
    let mut start = 0;
    for &end in ends {
        let rows = &candidates[start..end];
        start = end;
        // A single add is every column's pick: its own value, or its own null.
        if let [only] = rows {
            if !is_retract(*only) {
                picked.iter_mut().for_each(|p| p.push(*only));
                continue;
            }
        }
        for (r, (rule, picked)) in rules.iter().zip(&mut picked).enumerate() {
            let newest = rows.iter().rev().find_map(|&(batch, row)| {
                let retract = is_retract((batch, row));
                if retract && rule.skip_retracts {
                    return None;
                }
                let is_null =
                    nulls[batch * rules.len() + r].is_none_or(|n| n.is_some_and(|n| n.is_null(row)));
                if is_null && rule.skip_nulls {
                    return None;
                }
                Some(if retract { null } else { (batch, row) })
            });
            picked.push(newest.unwrap_or(null));
        }
    }
    picked
}

/// Most bytes of values a string or binary array with 32-bit offsets can hold.
const MAX_BYTES: usize = i32::MAX as usize;

fn is_narrow_bytes(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Utf8 | DataType::Binary)
}

/// The offsets of a string or binary column with 32-bit offsets (its own rows'; none for
/// other types).
fn narrow_offsets(column: &ArrayRef) -> &[i32] {
    match column.data_type() {
        DataType::Utf8 => column.as_string::<i32>().value_offsets(),
        DataType::Binary => column.as_binary::<i32>().value_offsets(),
        _ => &[],
    }
}

/// Bytes of the values of a string or binary column with 32-bit offsets.
fn value_bytes(column: &ArrayRef) -> usize {
    match narrow_offsets(column) {
        [first, .., last] => (last - first) as usize,
        _ => 0,
    }
}

/// Bytes of value `row` of a string or binary column with 32-bit offsets.
fn byte_length(column: &ArrayRef, row: usize) -> usize {
    let offsets = narrow_offsets(column);
    (offsets[row + 1] - offsets[row]) as usize
}

/// A list or map column of `rows`, their elements (or entries) gathered from the stored
/// batches' child arrays.
fn build_items(
    store: &BatchStore,
    column: usize,
    data_type: &DataType,
    rows: &[Option<Vec<Index>>],
) -> Result<ArrayRef> {
    let children: Vec<ArrayRef> = store.columns(column).into_iter().map(nested_values).collect();
    let children: Vec<&dyn Array> = children.iter().map(|c| c.as_ref()).collect();
    let indices: Vec<Index> = rows.iter().flatten().flatten().copied().collect();
    let values = interleave(&children, &indices)?;
    let lengths = rows.iter().map(|r| r.as_ref().map_or(0, Vec::len));
    let nulls = NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
    let nulls = Some(nulls).filter(|n| n.null_count() > 0);
    Ok(match data_type {
        DataType::List(field) => {
            Arc::new(ListArray::try_new(field.clone(), OffsetBuffer::from_lengths(lengths), values, nulls)?)
        }
        DataType::LargeList(field) => Arc::new(LargeListArray::try_new(
            field.clone(),
            OffsetBuffer::from_lengths(lengths),
            values,
            nulls,
        )?),
        DataType::Map(field, sorted) => Arc::new(MapArray::try_new(
            field.clone(),
            OffsetBuffer::from_lengths(lengths),
            values.as_struct().clone(),
            nulls,
            *sorted,
        )?),
        other => return Err(MergeError::Internal(format!("items built for a {other} column"))),
    })
}

fn gather(store: &BatchStore, column: usize, indices: &[Index]) -> Result<ArrayRef> {
    let arrays: Vec<&dyn Array> = store.columns(column).into_iter().map(|c| c.as_ref()).collect();
    Ok(interleave(&arrays, indices)?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Array, ArrayRef, StringArray};

    use super::{byte_length, value_bytes};

    #[test]
    fn byte_counts_of_a_sliced_string_column_are_its_own() {
        let words: ArrayRef = Arc::new(StringArray::from(vec!["a", "bb", "ccc", "dddd", "eeeee"]));
        let tail = words.slice(2, 3);
        assert_eq!(value_bytes(&tail), 3 + 4 + 5);
        assert_eq!((0..3).map(|r| byte_length(&tail, r)).collect::<Vec<_>>(), vec![3, 4, 5]);
    }
}
