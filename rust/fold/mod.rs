//! Merge functions: how the versions of one key fold into the output (Paimon's merge
//! engines). [`MergeFunction`] is what the user asks for; [`Folder`] is that request
//! checked against the schema, which folds each complete key group (in version order)
//! into the output builder.

mod aggregate;
pub(crate) mod value;

use crate::builder::{NewestRule, OutputBuilder, Sink};
use crate::error::{invalid, Result, RowLocation};
use crate::run::Layout;
use crate::store::{BatchStore, RowRef};
use crate::version::RowKind;
use aggregate::Aggregator;
pub use aggregate::{AggFunction, AggregateField};

/// How the versions of a key are folded.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeFunction {
    /// No folding: every row is kept, in (key, version) order.
    None,
    /// The newest version wins; a newest retract deletes the key.
    Deduplicate {
        /// Discard retracts before folding.
        ignore_delete: bool,
        /// Drop deleted keys (`true`) or keep them as one `-D` row.
        drop_deletes: bool,
    },
    /// The oldest add wins.
    FirstRow {
        /// Skip retracts instead of failing on them.
        ignore_delete: bool,
    },
    /// Every non-key column takes its newest non-null value among the adds.
    PartialUpdate {
        /// Skip retracts instead of failing on them.
        ignore_delete: bool,
        /// A `-D` clears the row so far (and `-U` is skipped).
        remove_record_on_delete: bool,
    },
    /// A function per non-key column.
    Aggregate {
        /// Columns with their own function; the others use `default`.
        fields: Vec<(String, AggregateField)>,
        /// The function of columns not named in `fields`.
        default: AggFunction,
        /// A `-D` clears the row so far.
        remove_record_on_delete: bool,
    },
}

impl Default for MergeFunction {
    fn default() -> Self {
        Self::Deduplicate { ignore_delete: false, drop_deletes: true }
    }
}

impl MergeFunction {
    /// Whether a run must hold each key at most once.
    pub(crate) fn folds(&self) -> bool {
        !matches!(self, Self::None)
    }

    /// The function for a run that is not the final result, because older runs lie
    /// below it (a spilled run, a table's new run, a partial compaction). Folding such a
    /// run early is sound only where folding is associative over contiguous versions:
    /// deduplicate (keeping a newest retract as `-D` so that it still deletes older
    /// rows), first-row, and partial-update or aggregate over `plain_rows` (rows with
    /// neither row kinds nor sequence numbers). Otherwise the run is left unfolded.
    pub fn for_partial_run(&self, plain_rows: bool) -> MergeFunction {
        match self {
            Self::Deduplicate { ignore_delete, .. } => {
                Self::Deduplicate { ignore_delete: *ignore_delete, drop_deletes: false }
            }
            Self::FirstRow { .. } | Self::None => self.clone(),
            Self::PartialUpdate { .. } | Self::Aggregate { .. } if plain_rows => self.clone(),
            _ => Self::None,
        }
    }

    /// Paimon's name of the function, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Deduplicate { .. } => "deduplicate",
            Self::FirstRow { .. } => "first-row",
            Self::PartialUpdate { .. } => "partial-update",
            Self::Aggregate { .. } => "aggregate",
        }
    }
}

/// A merge function checked against the runs' columns.
pub(crate) struct Folder {
    function: MergeFunction,
    aggregator: Option<Aggregator>,
    /// Columns that are neither key nor row kind (partial-update gathers each).
    value_columns: Vec<usize>,
}

impl Folder {
    pub(crate) fn new(function: MergeFunction, layout: &Layout) -> Result<Self> {
        let aggregator = match &function {
            MergeFunction::Aggregate { fields, default, .. } => {
                Some(Aggregator::new(fields, *default, layout)?)
            }
            _ => None,
        };
        let value_columns = (0..layout.schema.fields().len())
            .filter(|c| !layout.key.contains(c) && layout.row_kind != Some(*c))
            .collect();
        Ok(Self { function, aggregator, value_columns })
    }

    /// The columns the fold reads value by value (`Layout::view_columns`).
    pub(crate) fn view_columns(&self) -> Vec<usize> {
        match (&self.function, &self.aggregator) {
            (_, Some(aggregator)) => aggregator.view_columns(),
            (MergeFunction::PartialUpdate { .. }, _) => self.value_columns.clone(),
            _ => Vec::new(),
        }
    }

    /// Whether output values can be null where the input's were not (so the output
    /// schema must make those columns nullable).
    pub(crate) fn may_add_nulls(&self) -> bool {
        matches!(self.function, MergeFunction::PartialUpdate { .. } | MergeFunction::Aggregate { .. })
    }

    /// The output sink of every column.
    pub(crate) fn sinks(&self, layout: &Layout) -> Vec<Sink> {
        (0..layout.schema.fields().len())
            .map(|c| {
                if layout.row_kind == Some(c) {
                    Sink::RowKind
                } else if layout.key.contains(&c) {
                    Sink::Whole
                } else if let Some(aggregator) = &self.aggregator {
                    aggregator.sink(c)
                } else if matches!(self.function, MergeFunction::PartialUpdate { .. }) {
                    let slot = self.value_columns.iter().position(|&v| v == c).expect("a value column");
                    // The newest non-null value among the adds.
                    Sink::Newest(NewestRule { slot, skip_nulls: true, skip_retracts: true })
                } else {
                    Sink::Whole
                }
            })
            .collect()
    }

    /// Folds one key group (in version order) into `out`.
    pub(crate) fn fold(&self, group: &[RowRef], store: &BatchStore, out: &mut OutputBuilder) -> Result<()> {
        match self.function {
            MergeFunction::None => group.iter().for_each(|&r| out.push(r, store.kind(r))),
            MergeFunction::Deduplicate { ignore_delete, drop_deletes } => {
                let newest = if ignore_delete {
                    group.iter().rev().find(|&&r| !store.kind(r).is_retract())
                } else {
                    group.last()
                };
                let Some(&newest) = newest else { return Ok(()) };
                if !store.kind(newest).is_retract() {
                    out.push(newest, RowKind::Insert);
                } else if !drop_deletes {
                    out.push(newest, RowKind::Delete);
                }
            }
            MergeFunction::FirstRow { ignore_delete } => {
                if !ignore_delete {
                    refuse_retracts(group, store, "first-row", "set ignore_delete=True to skip retracts")?;
                }
                if let Some(&oldest) = group.iter().find(|&&r| !store.kind(r).is_retract()) {
                    out.push(oldest, RowKind::Insert);
                }
            }
            MergeFunction::PartialUpdate { ignore_delete, remove_record_on_delete } => {
                if !ignore_delete && !remove_record_on_delete {
                    refuse_retracts(
                        group,
                        store,
                        "partial-update",
                        "set ignore_delete=True or remove_record_on_delete=True",
                    )?;
                }
                // A -D clears everything before it; other retracts are skipped.
                let live = if remove_record_on_delete && !ignore_delete {
                    after_last_delete(group, store)
                } else {
                    group
                };
                self.partial_update(live, store, out);
            }
            MergeFunction::Aggregate { remove_record_on_delete, .. } => {
                let live = if remove_record_on_delete { after_last_delete(group, store) } else { group };
                let aggregator = self.aggregator.as_ref().expect("built with the function");
                aggregator.fold(live, store, out)?;
            }
        }
        Ok(())
    }

    /// The value columns are `Newest` sinks: the builder picks each one's value.
    fn partial_update(&self, rows: &[RowRef], store: &BatchStore, out: &mut OutputBuilder) {
        let Some(&newest) = rows.iter().rev().find(|&&r| !store.kind(r).is_retract()) else { return };
        out.push(newest, RowKind::Insert);
        out.candidates(rows);
    }
}

/// The rows after the group's last `-D` (all of them if there is none).
fn after_last_delete<'a>(group: &'a [RowRef], store: &BatchStore) -> &'a [RowRef] {
    match group.iter().rposition(|&r| store.kind(r) == RowKind::Delete) {
        Some(last) => &group[last + 1..],
        None => group,
    }
}

/// Fails on the first retract of `group`, naming the function and what to set.
fn refuse_retracts(group: &[RowRef], store: &BatchStore, function: &str, hint: &str) -> Result<()> {
    match group.iter().find(|&&r| store.kind(r).is_retract()) {
        None => Ok(()),
        Some(&r) => Err(invalid!(
            "{}: merge function '{function}' cannot take a retract ({}); {hint}",
            location(store, r),
            store.kind(r).as_str()
        )),
    }
}

/// Where a stored row came from, for messages.
pub(crate) fn location(store: &BatchStore, r: RowRef) -> RowLocation {
    let v = store.version(r);
    RowLocation { run: v.run, row: v.position }
}
