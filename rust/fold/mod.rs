//! Merge functions: how the versions of one key fold into the output (Paimon's merge
//! engines). [`MergeFunction`] is what the user asks for; [`Folder`] is that request
//! checked against the schema, which folds each complete key group (in version order)
//! into the output builder.
//!
//! Every function folds as Paimon's read path does:
//! 1. `ignore_delete` drops retracts before anything else sees them (Paimon's writer drops
//!    them before they are stored);
//! 2. a key with a single version passes through untouched, whatever its kind (Paimon's
//!    `ReducerMergeFunctionWrapper`): no function ever sees it alone;
//! 3. the function folds two versions or more into one row and its kind;
//! 4. a row whose kind is a retract is not output (Paimon's read drops them) and every
//!    output row is an add (`+I`), unless the function keeps deletes (`drop_deletes:
//!    false`, what Paimon's compaction below the top level does): then every row keeps
//!    the kind Paimon's merge gives it (a lone version its own, deduplicate's and
//!    first-row's result the chosen row's, partial-update's and aggregate's `+I`, or
//!    `-D` for a removed row or, in partial-update, a key met by no add), retracts
//!    included.

pub(crate) mod accumulator;
mod aggregate;
pub(crate) mod builder;
mod partial_update;

use arrow_schema::Field;

use crate::error::{invalid, MergeError, Result, RowLocation};
use crate::fold::builder::{OutputBuilder, Sink};
use crate::runs::store::{BatchStore, RowRef};
use crate::runs::value;
use crate::runs::version::RowKind;
use crate::runs::Layout;
use accumulator::{AccError, Cx, Output};
pub use accumulator::{AggFunction, AggregateField};
use aggregate::Aggregator;
use partial_update::PartialUpdater;

/// A partial-update sequence group: `ordering` columns decide whether a version is newer
/// for the `fields` they protect (Paimon's `fields.<ordering>.sequence-group = <fields>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceGroup {
    /// The columns ordering the group, compared one after the other (a null is oldest).
    pub ordering: Vec<String>,
    /// The columns the group updates.
    pub fields: Vec<String>,
}

/// How the versions of a key are folded.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeFunction {
    /// No folding: every row is kept, in (key, version) order.
    None,
    /// The newest version wins; a newest retract deletes the key.
    Deduplicate {
        /// Drop retracts before folding.
        ignore_delete: bool,
        /// Drop deleted keys (`true`) or keep every row with its kind (see the module's step 4).
        drop_deletes: bool,
    },
    /// The oldest add wins.
    FirstRow {
        /// Drop retracts before folding (otherwise two versions or more with a retract
        /// among them are an error).
        ignore_delete: bool,
        /// See [`MergeFunction::Deduplicate`].
        drop_deletes: bool,
    },
    /// Every non-key column takes its newest non-null value, or follows its sequence
    /// group or aggregate function.
    PartialUpdate {
        /// Drop retracts before folding.
        ignore_delete: bool,
        /// A `-D` replaces the row so far by its own values and deletes the key unless
        /// an add follows (a `-U` is skipped).
        remove_record_on_delete: bool,
        /// Sequence groups (a retract then clears or retracts its groups' columns).
        sequence_groups: Vec<SequenceGroup>,
        /// Aggregate functions of columns in sequence groups (or `last_non_null_value`).
        fields: Vec<(String, AggregateField)>,
        /// The function of columns not in `fields` (Paimon's `fields.default-aggregate-function`).
        default: Option<AggregateField>,
        /// Ordering columns whose group, when a `-D` is newer for it, deletes the whole row.
        remove_record_on_sequence_group: Vec<String>,
        /// See [`MergeFunction::Deduplicate`].
        drop_deletes: bool,
    },
    /// A function per non-key column.
    Aggregate {
        /// Columns with their own function; the others use `default`.
        fields: Vec<(String, AggregateField)>,
        /// The function of columns not named in `fields`.
        default: AggFunction,
        /// A `-D` replaces the row so far by its own values and deletes the key unless
        /// an add follows.
        remove_record_on_delete: bool,
        /// Drop retracts before folding.
        ignore_delete: bool,
        /// See [`MergeFunction::Deduplicate`].
        drop_deletes: bool,
    },
}

impl Default for MergeFunction {
    fn default() -> Self {
        Self::Deduplicate { ignore_delete: false, drop_deletes: true }
    }
}

impl MergeFunction {
    /// Partial-update with Paimon's defaults (newest non-null value per column).
    pub fn partial_update() -> Self {
        Self::PartialUpdate {
            ignore_delete: false,
            remove_record_on_delete: false,
            sequence_groups: Vec::new(),
            fields: Vec::new(),
            default: None,
            remove_record_on_sequence_group: Vec::new(),
            drop_deletes: true,
        }
    }

    /// Aggregate with `fields` and `last_non_null_value` for the other columns.
    pub fn aggregate(fields: Vec<(String, AggregateField)>) -> Self {
        Self::Aggregate {
            fields,
            default: AggFunction::LastNonNullValue,
            remove_record_on_delete: false,
            ignore_delete: false,
            drop_deletes: true,
        }
    }

    /// Whether a run must hold each key at most once.
    pub(crate) fn folds(&self) -> bool {
        !matches!(self, Self::None)
    }

    fn ignores_deletes(&self) -> bool {
        match self {
            Self::None => false,
            Self::Deduplicate { ignore_delete, .. }
            | Self::FirstRow { ignore_delete, .. }
            | Self::PartialUpdate { ignore_delete, .. }
            | Self::Aggregate { ignore_delete, .. } => *ignore_delete,
        }
    }

    /// The function for a run that is not the final result, because older runs lie
    /// below it (a spilled run, a table's new run, a partial compaction). Folding such a
    /// run early is sound only where folding contiguous versions first gives the same
    /// final result: deduplicate (keeping a newest retract as `-D` so that it still
    /// deletes older rows), and the others when no retract can reach them (`plain_rows`:
    /// rows with neither row kinds nor sequence numbers, or `ignore_delete`) and, for
    /// partial-update and aggregate, the order is arrival order. Otherwise the run is left
    /// unfolded.
    pub fn for_partial_run(&self, plain_rows: bool) -> MergeFunction {
        match self {
            Self::Deduplicate { ignore_delete, .. } => {
                Self::Deduplicate { ignore_delete: *ignore_delete, drop_deletes: false }
            }
            Self::None => Self::None,
            Self::FirstRow { ignore_delete: true, .. } => self.clone(),
            Self::FirstRow { .. } | Self::PartialUpdate { .. } | Self::Aggregate { .. } if plain_rows => {
                self.clone()
            }
            _ => Self::None,
        }
    }

    /// Why a write must not store a retract of `kind` for this function over runs of
    /// `schema` (`None`: it may): the retract would make every later read of its key fail
    /// (see [`Folder::retract_refusal`]). Paimon's writers fail the same way.
    pub fn retract_refusal(
        &self,
        schema: arrow_schema::SchemaRef,
        key: &[String],
        versions: &crate::runs::version::VersionColumns,
        kind: RowKind,
    ) -> Result<Option<String>> {
        let layout = Layout::new(schema, key, versions, false)?;
        Ok(Folder::new(self.clone(), &layout)?.retract_refusal(kind))
    }

    /// Whether retracts are dropped and every output row is an add (see the module's step 4).
    fn drops_deletes(&self) -> bool {
        match self {
            Self::None => false,
            Self::Deduplicate { drop_deletes, .. }
            | Self::FirstRow { drop_deletes, .. }
            | Self::PartialUpdate { drop_deletes, .. }
            | Self::Aggregate { drop_deletes, .. } => *drop_deletes,
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

/// Which fold runs for a group of two versions or more.
enum Engine {
    None,
    Deduplicate,
    FirstRow,
    PartialUpdate(PartialUpdater),
    Aggregate(Aggregator),
}

/// A merge function checked against the runs' columns.
pub(crate) struct Folder {
    engine: Engine,
    ignore_delete: bool,
    /// Every row keeps Paimon's kind, retracts included (`drop_deletes: false`).
    keep_kinds: bool,
    /// Columns that are neither key nor row kind, in schema order: the columns the
    /// partial-update and aggregate folds read value by value (their view slots).
    value_columns: Vec<usize>,
}

/// Which fold paths a [`Folder`] may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paths {
    /// The general path where it must, shortcuts where they give the same result.
    Fast,
    /// The general path only (for tests that prove the shortcuts equal to it).
    #[cfg_attr(not(test), allow(dead_code))]
    General,
}

/// The schema facts every fold is set up from.
pub(crate) struct Columns<'a> {
    pub layout: &'a Layout,
    /// The value columns (see [`Folder::value_columns`]).
    pub values: &'a [usize],
    pub paths: Paths,
}

impl Columns<'_> {
    fn field(&self, index: usize) -> &Field {
        self.layout.schema.field(index)
    }

    /// The position of a value column among the views.
    fn slot(&self, index: usize) -> usize {
        self.values.iter().position(|&v| v == index).expect("a value column")
    }

    /// The index of column `name`, which must be a value column (`what` names the option).
    fn value_column(&self, name: &str, what: &str) -> Result<usize> {
        let schema = &self.layout.schema;
        let index = schema.index_of(name).map_err(|_| invalid!("{what} names unknown column '{name}'"))?;
        let role = if self.layout.key.contains(&index) {
            "key"
        } else if self.layout.row_kind == Some(index) {
            "row-kind"
        } else if self.system_sequence() == Some(index) {
            "system sequence"
        } else {
            return Ok(index);
        };
        Err(invalid!("{what} names the {role} column '{name}', which is not a value column"))
    }

    /// The system sequence column (after the user sequence columns), if any.
    fn system_sequence(&self) -> Option<usize> {
        self.layout.sequence.get(self.layout.order.user_fields).copied()
    }

    fn user_sequence(&self) -> &[usize] {
        &self.layout.sequence[..self.layout.order.user_fields]
    }
}

impl Folder {
    pub(crate) fn new(function: MergeFunction, layout: &Layout) -> Result<Self> {
        Self::with_paths(function, layout, Paths::Fast)
    }

    pub(crate) fn with_paths(function: MergeFunction, layout: &Layout, paths: Paths) -> Result<Self> {
        let value_columns: Vec<usize> = (0..layout.schema.fields().len())
            .filter(|c| !layout.key.contains(c) && layout.row_kind != Some(*c))
            .collect();
        let columns = Columns { layout, values: &value_columns, paths };
        let engine = match &function {
            MergeFunction::None => Engine::None,
            MergeFunction::Deduplicate { .. } => Engine::Deduplicate,
            MergeFunction::FirstRow { .. } => {
                if !columns.user_sequence().is_empty() {
                    return Err(invalid!(
                        "merge function 'first-row' takes no sequence columns (as Paimon's)"
                    ));
                }
                Engine::FirstRow
            }
            MergeFunction::PartialUpdate { .. } => {
                Engine::PartialUpdate(PartialUpdater::new(&function, &columns)?)
            }
            MergeFunction::Aggregate { .. } => Engine::Aggregate(Aggregator::new(&function, &columns)?),
        };
        let keep_kinds = function.folds() && !function.drops_deletes();
        Ok(Self { engine, ignore_delete: function.ignores_deletes(), keep_kinds, value_columns })
    }

    /// The columns the fold reads value by value (`Layout::view_columns`).
    pub(crate) fn view_columns(&self) -> Vec<usize> {
        match self.engine {
            Engine::PartialUpdate(_) | Engine::Aggregate(_) => self.value_columns.clone(),
            _ => Vec::new(),
        }
    }

    /// Whether output values can be null where the input's were not (so the output
    /// schema must make those columns nullable).
    pub(crate) fn may_add_nulls(&self) -> bool {
        matches!(self.engine, Engine::PartialUpdate(_) | Engine::Aggregate(_))
    }

    /// The output sink of every column.
    pub(crate) fn sinks(&self, layout: &Layout) -> Vec<Sink> {
        (0..layout.schema.fields().len())
            .map(|c| {
                if layout.row_kind == Some(c) {
                    Sink::RowKind
                } else if layout.key.contains(&c) {
                    Sink::Whole
                } else {
                    match &self.engine {
                        Engine::PartialUpdate(updater) => updater.sink(c),
                        Engine::Aggregate(aggregator) => aggregator.sink(c),
                        _ => Sink::Whole,
                    }
                }
            })
            .collect()
    }

    /// Why this function cannot fold a retract of `kind` with other versions of its key,
    /// whatever their values (`None`: it can): what a write checks before it stores a
    /// retract that would make every later read of the key fail, worded as the fold's
    /// error when it meets one.
    pub(crate) fn retract_refusal(&self, kind: RowKind) -> Option<String> {
        if self.ignore_delete {
            return None;
        }
        match &self.engine {
            Engine::None | Engine::Deduplicate => None,
            Engine::FirstRow => Some(first_row_refuses(kind)),
            Engine::PartialUpdate(updater) => updater.retract_refusal(kind),
            Engine::Aggregate(aggregator) => aggregator.retract_refusal(kind),
        }
    }

    /// Whether a read's output of a key with one version is that row as stored (its
    /// kind made `+I`), a retract left out: every function with retracts dropped
    /// (step 4), except partial-update and aggregates of collections, which build the
    /// row's values anew. A run holding each key once then needs no fold.
    pub(crate) fn passes_lone_rows_as_stored(&self) -> bool {
        !self.keep_kinds
            && match &self.engine {
                Engine::Deduplicate | Engine::FirstRow => true,
                Engine::Aggregate(aggregator) => aggregator.passes_lone_adds_as_stored(),
                Engine::PartialUpdate(_) | Engine::None => false,
            }
    }

    /// Folds one key group (in version order) into `out`.
    #[inline(always)]
    pub(crate) fn fold(&self, group: &[RowRef], store: &BatchStore, out: &mut OutputBuilder) -> Result<()> {
        // The common cases, small enough to inline into the merge loop: most groups are
        // one row, and a call into the whole fold cost as much as what it did for them.
        match (&self.engine, group) {
            (Engine::None, _) => {
                group.iter().for_each(|&r| out.push(r, store.kind(r)));
                Ok(())
            }
            (Engine::Deduplicate | Engine::FirstRow, &[single]) if !self.ignore_delete => {
                self.emit_own(single, store, out);
                Ok(())
            }
            _ => self.fold_group(group, store, out),
        }
    }

    #[inline(never)]
    fn fold_group(&self, group: &[RowRef], store: &BatchStore, out: &mut OutputBuilder) -> Result<()> {
        let adds: Vec<RowRef>;
        let rows = if self.ignore_delete && group.iter().any(|&r| store.is_retract(r)) {
            adds = group.iter().copied().filter(|&r| !store.is_retract(r)).collect();
            &adds[..]
        } else {
            group
        };
        match rows {
            [] => Ok(()),
            [single] => self.pass_through(*single, store, out),
            _ => self.fold_versions(rows, store, out),
        }
    }

    /// Starts an output row from `row`, whose values a fold gave Paimon's `kind`, if such
    /// a row is output (see the module's step 4); `false` if it is not.
    #[inline(always)]
    pub(crate) fn emit(&self, row: RowRef, kind: RowKind, out: &mut OutputBuilder) -> bool {
        match (self.keep_kinds, kind.is_retract()) {
            (true, _) => out.push(row, kind),
            (false, false) => out.push(row, RowKind::Insert),
            (false, true) => return false,
        }
        true
    }

    /// [`Folder::emit`] of `row` with its own kind: the kind output, `None` if it is not.
    /// A read (no kinds kept) asks a batch without retracts no row's kind.
    #[inline(always)]
    fn emit_own(&self, row: RowRef, store: &BatchStore, out: &mut OutputBuilder) -> Option<RowKind> {
        let kind = match self.keep_kinds {
            true => store.kind(row),
            false if store.is_retract(row) => return None,
            false => RowKind::Insert,
        };
        out.push(row, kind);
        Some(kind)
    }

    /// A key's only version, untouched, with its own kind.
    fn pass_through(&self, row: RowRef, store: &BatchStore, out: &mut OutputBuilder) -> Result<()> {
        let Some(kind) = self.emit_own(row, store, out) else { return Ok(()) };
        let retract = kind.is_retract();
        match &self.engine {
            Engine::PartialUpdate(updater) => updater.pass_through(row, retract, store, out),
            Engine::Aggregate(aggregator) => aggregator.pass_through(row, retract, store, out),
            _ => Ok(()),
        }
    }

    fn fold_versions(&self, rows: &[RowRef], store: &BatchStore, out: &mut OutputBuilder) -> Result<()> {
        match &self.engine {
            Engine::None => unreachable!("handled by fold"),
            Engine::Deduplicate => {
                let newest = *rows.last().expect("two versions or more");
                self.emit_own(newest, store, out);
                Ok(())
            }
            Engine::FirstRow => {
                if let Some(&r) = rows.iter().find(|&&r| store.is_retract(r)) {
                    return Err(invalid!("{}: {}", location(store, r), first_row_refuses(store.kind(r))));
                }
                // The oldest is an add (a retract failed above): a read needs no look at it.
                let kind = if self.keep_kinds { store.kind(rows[0]) } else { RowKind::Insert };
                out.push(rows[0], kind);
                Ok(())
            }
            Engine::PartialUpdate(updater) => updater.fold(self, rows, store, out),
            Engine::Aggregate(aggregator) => aggregator.fold(self, rows, store, out),
        }
    }
}

/// Why first-row cannot fold a retract (Paimon's `FirstRowMergeFunction` refuses them).
fn first_row_refuses(kind: RowKind) -> String {
    format!(
        "merge function 'first-row' cannot take a retract ({}) among several versions of a key; set \
         ignore_delete=True to drop retracts (Paimon: 'ignore-delete')",
        kind.as_str()
    )
}

/// Why an aggregate function cannot fold a retract of a column.
fn cannot_retract(column: &str, function: AggFunction, kind: RowKind) -> String {
    format!(
        "aggregate function '{}' of column '{column}' cannot take a retract ({}); set ignore_retract for \
         that field (Paimon: 'fields.{column}.ignore-retract')",
        function.name(),
        kind.as_str()
    )
}

/// Where a stored row came from, for messages.
pub(crate) fn location(store: &BatchStore, r: RowRef) -> RowLocation {
    let v = store.version(r);
    RowLocation { run: v.run, row: v.position }
}

/// The sink of a column whose value an accumulator decides.
fn sink_of(output: Output, data_type: &arrow_schema::DataType) -> Sink {
    match output {
        Output::Pick => Sink::Gather(Vec::new()),
        Output::Compute => Sink::Computed(value::Computed::for_type(data_type)),
        Output::Items => Sink::Items(Default::default()),
    }
}

/// An accumulator's failure as a merge error naming the row, key, column and function.
fn acc_error(
    e: AccError,
    column: &str,
    function: AggFunction,
    store: &BatchStore,
    row: RowRef,
    key: &[usize],
) -> MergeError {
    let at = format!("{}, key ({})", location(store, row), key_text(store, row, key));
    let name = function.name();
    match e {
        AccError::CannotRetract => invalid!("{at}: {}", cannot_retract(column, function, store.kind(row))),
        AccError::Overflow => invalid!("{at}: {name} of column '{column}' overflows its type"),
        AccError::Division => invalid!(
            "{at}: {name} of column '{column}' cannot take this retract back: it divides by zero or gives a \
             decimal that does not terminate"
        ),
    }
}

/// The key of `row`, for messages.
fn key_text(store: &BatchStore, row: RowRef, key: &[usize]) -> String {
    let stored = store.get(row.batch);
    let key = key.iter().map(|&k| {
        let column = stored.batch.column(k);
        match value::read(column.as_ref(), row.row as usize) {
            Some(value::Value::Bytes(b)) => format!("'{}'", String::from_utf8_lossy(b)),
            Some(value::Value::Int(v)) => v.to_string(),
            Some(value::Value::Float(v)) => v.to_string(),
            Some(value::Value::Bool(v)) => v.to_string(),
            None => "?".into(),
        }
    });
    key.collect::<Vec<_>>().join(", ")
}

/// The view of `cx` for column `index` at `slot`.
fn cx(store: &BatchStore, index: usize, slot: usize) -> Cx<'_> {
    Cx { store, slot, column: index }
}
