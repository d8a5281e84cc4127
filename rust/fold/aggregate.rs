//! The `aggregate` merge function (Paimon's `AggregateMergeFunction`): one accumulator per
//! value column, fed every version in order (`agg` for adds, `retract` for retracts).
//!
//! Fast path, for a key whose versions are all adds: `last_value` and
//! `last_non_null_value` leave the pick to the builder (a `Newest` sink, fed the key's
//! versions once), an int64 `sum` adds straight from the column's values, the others run
//! their accumulator's `agg`. `Paths::General` turns the shortcuts off so tests can prove
//! them equal to the general path.

use arrow_schema::DataType;

use super::accumulator::{accumulator, Acc, AccError, Accumulator, Output, State};
use super::{
    acc_error, cannot_retract, cx, sink_of, AggFunction, AggregateField, Columns, MergeFunction, Paths,
};
use crate::error::{invalid, Result};
use crate::fold::builder::{NewestRule, OutputBuilder, Sink};
use crate::runs::store::{BatchStore, RowRef};
use crate::runs::value::{ColumnView, Value};
use crate::runs::version::RowKind;

struct Column {
    index: usize,
    /// Position of the column's view in each stored batch.
    slot: usize,
    name: String,
    data_type: DataType,
    function: AggFunction,
    accumulator: Box<dyn Accumulator>,
    /// How the accumulator's result reaches the output.
    output: Output,
    /// The builder's rule when it picks this column's value on the fast path
    /// (last_value and last_non_null_value).
    newest: Option<NewestRule>,
    /// An int64 sum, added straight from the views on the fast path.
    int64_sum: bool,
}

pub(crate) struct Aggregator {
    /// The key columns, for messages.
    key: Vec<usize>,
    /// Rows have kinds (without, every row is an add and no kind need be looked at).
    has_row_kinds: bool,
    columns: Vec<Column>,
    /// Paimon's `_SEQUENCE_NUMBER`: the newest version's value.
    system_sequence: Option<usize>,
    remove_record_on_delete: bool,
    paths: Paths,
}

impl Aggregator {
    pub(crate) fn new(function: &MergeFunction, columns: &Columns) -> Result<Self> {
        let MergeFunction::Aggregate { fields, default, remove_record_on_delete, .. } = function else {
            unreachable!("built for aggregate")
        };
        for (i, (name, field)) in fields.iter().enumerate() {
            let index = columns.value_column(name, "aggregate fields")?;
            if fields[..i].iter().any(|(n, _)| n == name) {
                return Err(invalid!("aggregate fields name column '{name}' twice"));
            }
            if columns.user_sequence().contains(&index) {
                return Err(invalid!(
                    "aggregate fields name the sequence column '{name}': a sequence column is not aggregated \
                     (it takes the newest version's value, as Paimon's)"
                ));
            }
            if field.ignore_retract && *remove_record_on_delete {
                return Err(invalid!(
                    "remove_record_on_delete and ignore_retract of column '{name}' conflict (Paimon refuses \
                     'aggregation.remove-record-on-delete' with 'fields.{name}.ignore-retract')"
                ));
            }
        }
        let mut out = Vec::new();
        for &index in columns.values {
            if Some(index) == columns.system_sequence() {
                continue;
            }
            let f = columns.field(index);
            let named = fields.iter().find(|(n, _)| n == f.name()).map(|(_, field)| field.clone());
            // A sequence column keeps the newest version's value, as Paimon's last_value.
            let fallback = match columns.user_sequence().contains(&index) {
                true => AggFunction::LastValue,
                false => *default,
            };
            let field = named.clone().unwrap_or_else(|| AggregateField::new(fallback));
            let accumulator = accumulator(&field, f).map_err(|e| match named {
                Some(_) => e,
                None => invalid!("{e} (it is the default function; name a function for this column)"),
            })?;
            let slot = columns.slot(index);
            let fast = columns.paths == Paths::Fast;
            let skip_nulls = match field.function {
                AggFunction::LastValue => Some(false),
                AggFunction::LastNonNullValue => Some(true),
                _ => None,
            };
            out.push(Column {
                index,
                slot,
                name: f.name().clone(),
                data_type: f.data_type().clone(),
                function: field.function,
                output: accumulator.output(),
                accumulator,
                newest: skip_nulls.filter(|_| fast).map(|skip_nulls| NewestRule {
                    slot,
                    skip_nulls,
                    skip_retracts: field.ignore_retract,
                }),
                int64_sum: fast && field.function == AggFunction::Sum && *f.data_type() == DataType::Int64,
            });
        }
        Ok(Self {
            key: columns.layout.key.clone(),
            has_row_kinds: columns.layout.row_kind.is_some(),
            columns: out,
            system_sequence: columns.system_sequence(),
            remove_record_on_delete: *remove_record_on_delete,
            paths: columns.paths,
        })
    }

    pub(crate) fn sink(&self, column: usize) -> Sink {
        match self.columns.iter().find(|c| c.index == column) {
            Some(Column { newest: Some(rule), .. }) => Sink::newest(*rule),
            Some(c) => sink_of(c.output, &c.data_type),
            None => Sink::Gather(Vec::new()), // the system sequence
        }
    }

    /// A key's only version: every value as it is (a `retract`, kept by a compaction,
    /// also in the columns whose newest pick would pass it over).
    pub(crate) fn pass_through(
        &self,
        row: RowRef,
        retract: bool,
        store: &BatchStore,
        out: &mut OutputBuilder,
    ) -> Result<()> {
        out.candidates(&[row]);
        if retract {
            for c in &self.columns {
                out.set(&Acc::Row(row), &cx(store, c.index, c.slot), store)?;
            }
            self.system_sequence.iter().for_each(|&s| out.gather(s, row));
            return Ok(());
        }
        for c in self.columns.iter().filter(|c| c.newest.is_none()) {
            match c.output {
                Output::Pick => out.gather(c.index, row),
                Output::Compute => out.computed(c.index).push_value(store.value(row, c.slot)),
                Output::Items => out.set(&Acc::Row(row), &cx(store, c.index, c.slot), store)?,
            }
        }
        self.system_sequence.iter().for_each(|&s| out.gather(s, row));
        Ok(())
    }

    /// Whether [`Self::pass_through`] of an add gives its values as stored: every column
    /// picked from the row or pushed as its value, none built as items.
    pub(crate) fn passes_lone_adds_as_stored(&self) -> bool {
        self.columns.iter().all(|c| c.newest.is_some() || !matches!(c.output, Output::Items))
    }

    /// See [`super::Folder::retract_refusal`]: a `-D` with `remove_record_on_delete`
    /// replaces the row; any other retract reaches every column's function.
    pub(crate) fn retract_refusal(&self, kind: RowKind) -> Option<String> {
        if self.remove_record_on_delete && kind == RowKind::Delete {
            return None;
        }
        let c = self.columns.iter().find(|c| !c.accumulator.retracts())?;
        Some(cannot_retract(&c.name, c.function, kind))
    }

    /// Folds two versions or more (after `ignore_delete`) into one row: `+I`, or with
    /// `remove_record_on_delete` the newest `-D`'s values as `-D` (output if `folder` keeps it).
    pub(crate) fn fold(
        &self,
        folder: &super::Folder,
        rows: &[RowRef],
        store: &BatchStore,
        out: &mut OutputBuilder,
    ) -> Result<()> {
        let newest = *rows.last().expect("two versions or more");
        let all_adds = !self.has_row_kinds || rows.iter().all(|&r| !store.is_retract(r));
        if all_adds && self.paths == Paths::Fast {
            out.push(newest, RowKind::Insert);
            out.candidates(rows);
            for c in self.columns.iter().filter(|c| c.newest.is_none()) {
                match c.int64_sum.then(|| sum_int64(rows, store, c.slot)).flatten() {
                    Some(Ok(total)) => out.computed(c.index).push_value(total.map(|t| Value::Int(t.into()))),
                    Some(Err(at)) => {
                        return Err(acc_error(AccError::Overflow, &c.name, c.function, store, at, &self.key))
                    }
                    None => out.set(&self.accumulate(c, rows, store)?, &cx(store, c.index, c.slot), store)?,
                }
            }
        } else {
            let mut states: Vec<State> = vec![State::default(); self.columns.len()];
            let mut deleted = false;
            for &r in rows {
                deleted = self.remove_record_on_delete && store.kind(r) == RowKind::Delete;
                if deleted {
                    // The row so far becomes the delete's values (first-value functions keep
                    // their state, as Paimon's aggregators are not reset here).
                    states.iter_mut().for_each(|s| s.acc = Acc::Row(r));
                    continue;
                }
                let retract = store.is_retract(r);
                for (c, state) in self.columns.iter().zip(&mut states) {
                    let cx = cx(store, c.index, c.slot);
                    let step = match retract {
                        true => c.accumulator.retract(state, Acc::Row(r), &cx),
                        false => c.accumulator.agg(state, Acc::Row(r), &cx),
                    };
                    step.map_err(|e| acc_error(e, &c.name, c.function, store, r, &self.key))?;
                }
            }
            let kind = if deleted { RowKind::Delete } else { RowKind::Insert };
            if !folder.emit(newest, kind, out) {
                return Ok(());
            }
            for (c, state) in self.columns.iter().zip(&states) {
                out.set(&state.acc, &cx(store, c.index, c.slot), store)?;
            }
        }
        self.system_sequence.iter().for_each(|&s| out.gather(s, newest));
        Ok(())
    }

    /// One column's `agg` over rows that are all adds.
    fn accumulate(&self, c: &Column, rows: &[RowRef], store: &BatchStore) -> Result<Acc> {
        let cx = cx(store, c.index, c.slot);
        let mut state = State::default();
        for &r in rows {
            c.accumulator
                .agg(&mut state, Acc::Row(r), &cx)
                .map_err(|e| acc_error(e, &c.name, c.function, store, r, &self.key))?;
        }
        Ok(state.acc)
    }
}

/// Sum of an int64 column over rows that are all adds, straight from the typed views;
/// `None` if some row's view is not int64, `Err(row)` for the row where it overflows.
fn sum_int64(rows: &[RowRef], store: &BatchStore, slot: usize) -> Option<Result<Option<i64>, RowRef>> {
    let mut total: Option<i64> = None;
    for &r in rows {
        let ColumnView::Int64 { values, nulls } = store.view(r, slot) else { return None };
        let row = r.row as usize;
        if nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            continue;
        }
        match total.unwrap_or(0).checked_add(values[row]) {
            Some(t) => total = Some(t),
            None => return Some(Err(r)),
        }
    }
    Some(Ok(total))
}
