//! The `aggregate` merge function: one of Paimon's aggregate functions per column.
//!
//! Functions that pick a stored value record which row it is, so the builder gathers it
//! like any other value: last_value and last_non_null_value leave the pick to the
//! builder (a `Newest` sink, fed the key's versions once), first/min/max pick here.
//! Functions that compute (sum, product, listagg, bool_and/or) write their result to a
//! [`Computed`] buffer.

use std::cmp::Ordering;
use std::str::FromStr;

use arrow_schema::DataType;

use super::location;
use super::value::{int_fits, kind_of, read, ColumnView, Computed, Value, ValueKind};
use crate::builder::{NewestRule, OutputBuilder, Sink};
use crate::error::{invalid, MergeError, Result};
use crate::run::Layout;
use crate::store::{BatchStore, RowRef};
use crate::version::RowKind;

/// Paimon's aggregate functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunction {
    /// Sum of the non-null values; a retract subtracts.
    Sum,
    /// Product of the non-null values.
    Product,
    /// Smallest non-null value.
    Min,
    /// Largest non-null value.
    Max,
    /// Newest value, even if null; a retract sets null.
    LastValue,
    /// Newest non-null value; a retract of a non-null value sets null.
    LastNonNullValue,
    /// Oldest value, even if null.
    FirstValue,
    /// Oldest non-null value.
    FirstNonNullValue,
    /// Non-null strings joined in version order.
    ListAgg,
    /// Logical and of the non-null booleans.
    BoolAnd,
    /// Logical or of the non-null booleans.
    BoolOr,
}

const NAMES: [(&str, AggFunction); 11] = [
    ("sum", AggFunction::Sum),
    ("product", AggFunction::Product),
    ("min", AggFunction::Min),
    ("max", AggFunction::Max),
    ("last_value", AggFunction::LastValue),
    ("last_non_null_value", AggFunction::LastNonNullValue),
    ("first_value", AggFunction::FirstValue),
    ("first_non_null_value", AggFunction::FirstNonNullValue),
    ("listagg", AggFunction::ListAgg),
    ("bool_and", AggFunction::BoolAnd),
    ("bool_or", AggFunction::BoolOr),
];

impl FromStr for AggFunction {
    type Err = MergeError;

    fn from_str(s: &str) -> Result<Self> {
        NAMES.iter().find(|(name, _)| *name == s).map(|(_, f)| *f).ok_or_else(|| {
            let names: Vec<_> = NAMES.iter().map(|(n, _)| *n).collect();
            invalid!("unknown aggregate function '{s}' (expected one of: {})", names.join(", "))
        })
    }
}

impl AggFunction {
    /// Paimon's name.
    pub fn name(self) -> &'static str {
        NAMES.iter().find(|(_, f)| *f == self).map(|(n, _)| *n).unwrap_or("?")
    }

    fn takes_retract(self) -> bool {
        matches!(self, Self::Sum | Self::LastValue | Self::LastNonNullValue)
    }

    fn computes(self) -> bool {
        matches!(self, Self::Sum | Self::Product | Self::ListAgg | Self::BoolAnd | Self::BoolOr)
    }

    fn applies_to(self, kind: ValueKind) -> bool {
        use ValueKind::*;
        match self {
            Self::Sum | Self::Product => matches!(kind, Number | Float),
            Self::Min | Self::Max => !matches!(kind, Other),
            Self::ListAgg => kind == Text,
            Self::BoolAnd | Self::BoolOr => kind == Bool,
            Self::LastValue | Self::LastNonNullValue | Self::FirstValue | Self::FirstNonNullValue => true,
        }
    }
}

/// The aggregation of one column.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateField {
    /// The function.
    pub function: AggFunction,
    /// Separator of `listagg` (default `,`).
    pub delimiter: String,
    /// Skip retracts for this column instead of failing on them.
    pub ignore_retract: bool,
}

impl AggregateField {
    /// `function` with the default options.
    pub fn new(function: AggFunction) -> Self {
        Self { function, delimiter: ",".into(), ignore_retract: false }
    }
}

struct Column {
    index: usize,
    /// Position of the column's view in each stored batch.
    slot: usize,
    name: String,
    data_type: DataType,
    field: AggregateField,
    /// A sequence column: it takes the newest version's value, retract or not, so that the
    /// folded row sorts after every version it replaces.
    sequence: bool,
    /// The builder's rule when it picks this column's value (last_value and
    /// last_non_null_value); `None` when the fold decides.
    newest: Option<NewestRule>,
}

/// See [`Column::newest`].
fn newest_rule(field: &AggregateField, slot: usize, sequence: bool) -> Option<NewestRule> {
    let skip_nulls = match field.function {
        _ if sequence => return None,
        AggFunction::LastValue => false,
        AggFunction::LastNonNullValue => true,
        _ => return None,
    };
    Some(NewestRule { slot, skip_nulls, skip_retracts: field.ignore_retract })
}

pub(crate) struct Aggregator {
    columns: Vec<Column>,
    key: Vec<usize>,
    /// The merge has a row-kind column (without one every row is an add).
    has_row_kinds: bool,
}

impl Aggregator {
    pub(crate) fn new(
        fields: &[(String, AggregateField)],
        default: AggFunction,
        layout: &Layout,
    ) -> Result<Self> {
        let schema = &layout.schema;
        for (i, (name, _)) in fields.iter().enumerate() {
            let index = schema
                .index_of(name)
                .map_err(|_| invalid!("aggregate fields name unknown column '{name}'"))?;
            let role = if layout.key.contains(&index) {
                Some("key")
            } else if layout.sequence.contains(&index) {
                Some("sequence")
            } else if layout.row_kind == Some(index) {
                Some("row-kind")
            } else {
                None
            };
            if let Some(role) = role {
                return Err(invalid!(
                    "aggregate fields name the {role} column '{name}', which is not aggregated"
                ));
            }
            if fields[..i].iter().any(|(n, _)| n == name) {
                return Err(invalid!("aggregate fields name column '{name}' twice"));
            }
        }
        let mut columns = Vec::new();
        for (index, f) in schema.fields().iter().enumerate() {
            if layout.key.contains(&index) || layout.row_kind == Some(index) {
                continue;
            }
            let named = fields.iter().find(|(n, _)| n == f.name()).map(|(_, field)| field.clone());
            // A sequence column keeps the newest sequence (see `Column::sequence`); the
            // default function may not even apply to its type.
            let fallback = if layout.sequence.contains(&index) { AggFunction::LastValue } else { default };
            let field = named.clone().unwrap_or_else(|| AggregateField::new(fallback));
            let scaled = matches!(f.data_type(), DataType::Decimal128(_, s) if *s != 0);
            if field.function == AggFunction::Product && scaled {
                return Err(invalid!(
                    "aggregate function 'product' does not apply to column '{}': decimals with a scale",
                    f.name()
                ));
            }
            if !field.function.applies_to(kind_of(f.data_type())) {
                let how =
                    if named.is_some() { "" } else { " (the default; name a function for this column)" };
                return Err(invalid!(
                    "aggregate function '{}'{how} does not apply to column '{}' of type {}",
                    field.function.name(),
                    f.name(),
                    f.data_type()
                ));
            }
            let slot = columns.len();
            let sequence = layout.sequence.contains(&index);
            columns.push(Column {
                index,
                slot,
                name: f.name().clone(),
                data_type: f.data_type().clone(),
                newest: newest_rule(&field, slot, sequence),
                field,
                sequence,
            });
        }
        Ok(Self { columns, key: layout.key.clone(), has_row_kinds: layout.row_kind.is_some() })
    }

    /// The columns whose values the aggregates read, in view-slot order.
    pub(crate) fn view_columns(&self) -> Vec<usize> {
        self.columns.iter().map(|c| c.index).collect()
    }

    pub(crate) fn sink(&self, column: usize) -> Sink {
        match self.columns.iter().find(|c| c.index == column) {
            Some(c) if c.field.function.computes() => Sink::Computed(Computed::for_type(&c.data_type)),
            Some(c) => c.newest.map_or(Sink::Gather(Vec::new()), Sink::Newest),
            None => Sink::Gather(Vec::new()),
        }
    }

    /// Folds `rows` (one key's versions after any clearing delete) into `out`.
    pub(crate) fn fold(&self, rows: &[RowRef], store: &BatchStore, out: &mut OutputBuilder) -> Result<()> {
        let first_retract = match self.has_row_kinds {
            true => rows.iter().find(|&&r| store.kind(r).is_retract()),
            false => None,
        };
        if let Some(&r) = first_retract {
            if let Some(c) =
                self.columns.iter().find(|c| !c.field.function.takes_retract() && !c.field.ignore_retract)
            {
                return Err(invalid!(
                    "{}: aggregate function '{}' of column '{}' cannot take a retract ({}); \
                     set ignore_retract for that field",
                    location(store, r),
                    c.field.function.name(),
                    c.name,
                    store.kind(r).as_str()
                ));
            }
        }
        let Some(&newest) = rows.iter().rev().find(|&&r| !store.kind(r).is_retract()) else {
            return Ok(()); // no add left: the key is dropped
        };
        out.push(newest, RowKind::Insert);
        out.candidates(rows);
        if let [single] = rows {
            // A key seen once passes through as it is.
            for c in &self.columns {
                match c.field.function.computes() {
                    true => out.computed(c.index).push_value(store.value(*single, c.slot)),
                    false => out.gather(c.index, *single),
                }
            }
            return Ok(());
        }
        let all_adds = first_retract.is_none();
        for c in &self.columns {
            if c.newest.is_some() {
                continue; // the builder picks
            } else if c.field.function.computes() {
                let value = Self::compute(c, rows, store, all_adds)
                    .map_err(|Overflow| self.overflow(c, store, newest))?;
                push_computed(out.computed(c.index), value);
            } else if c.sequence {
                out.gather(c.index, *rows.last().expect("a group holds at least one row"));
            } else {
                let picked = if all_adds { pick_among_adds(c, rows, store) } else { pick(c, rows, store) };
                out.gather(c.index, picked.unwrap_or_else(|| store.null_row()));
            }
        }
        Ok(())
    }

    /// The result of a computing aggregate over `rows`.
    /// `all_adds`: the group holds no retract (so row kinds need not be looked at).
    fn compute(
        c: &Column,
        rows: &[RowRef],
        store: &BatchStore,
        all_adds: bool,
    ) -> Result<Option<Acc>, Overflow> {
        if all_adds && c.field.function == AggFunction::Sum {
            if let Some(total) = sum_int64(rows, store, c.slot) {
                return total.map(|t| t.map(Acc::Int));
            }
        }
        let mut acc: Option<Acc> = None;
        for &r in rows {
            let retract = !all_adds && store.kind(r).is_retract();
            if retract && c.field.ignore_retract {
                continue;
            }
            if let Some(value) = store.value(r, c.slot) {
                acc = step(c, acc, value, retract)?;
            }
        }
        match acc {
            Some(Acc::Int(v)) if !int_fits(&c.data_type, v) => Err(Overflow),
            other => Ok(other),
        }
    }

    fn overflow(&self, c: &Column, store: &BatchStore, r: RowRef) -> MergeError {
        let key: Vec<String> = self
            .key
            .iter()
            .map(|&k| {
                read(store.get(r.batch).batch.column(k).as_ref(), r.row as usize)
                    .map_or("null".into(), |v| v.display())
            })
            .collect();
        invalid!(
            "key ({}): {} of column '{}' overflows its type {}",
            key.join(", "),
            c.field.function.name(),
            c.name,
            c.data_type
        )
    }
}

/// Sum of an int64 column over rows that are all adds, straight from the typed views;
/// `None` if some row's view is not int64.
fn sum_int64(rows: &[RowRef], store: &BatchStore, slot: usize) -> Option<Result<Option<i128>, Overflow>> {
    let mut total: Option<i64> = None;
    for &r in rows {
        let ColumnView::Int64 { values, nulls } = store.view(r, slot) else { return None };
        let row = r.row as usize;
        if nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            continue;
        }
        match total.unwrap_or(0).checked_add(values[row]) {
            Some(t) => total = Some(t),
            None => return Some(Err(Overflow)),
        }
    }
    Some(Ok(total.map(i128::from)))
}

/// An integer result left the range of its column (or of `i128`).
struct Overflow;

/// Adds one non-null value (retracted, for `sum`) to a running aggregate.
fn step(c: &Column, acc: Option<Acc>, value: Value<'_>, retract: bool) -> Result<Option<Acc>, Overflow> {
    use AggFunction::*;
    let f = c.field.function;
    Ok(Some(match (acc, value) {
        (None, v) if !retract => Acc::from(v),
        // Only sum takes retracts: the others failed or skipped them before.
        (None, Value::Int(v)) => Acc::Int(v.checked_neg().ok_or(Overflow)?),
        (None, Value::Float(v)) => Acc::Float(-v),
        (Some(Acc::Int(a)), Value::Int(v)) => Acc::Int(
            match (f, retract) {
                (Sum, false) => a.checked_add(v),
                (Sum, true) => a.checked_sub(v),
                _ => a.checked_mul(v),
            }
            .ok_or(Overflow)?,
        ),
        (Some(Acc::Float(a)), Value::Float(v)) => Acc::Float(match (f, retract) {
            (Sum, false) => a + v,
            (Sum, true) => a - v,
            _ => a * v,
        }),
        (Some(Acc::Text(mut a)), Value::Bytes(v)) => {
            a.push_str(&c.field.delimiter);
            a.push_str(&String::from_utf8_lossy(v));
            Acc::Text(a)
        }
        (Some(Acc::Bool(a)), Value::Bool(v)) => Acc::Bool(if f == BoolAnd { a && v } else { a || v }),
        (previous, _) => return Ok(previous),
    }))
}

/// The running value of a computing aggregate.
enum Acc {
    Int(i128),
    Float(f64),
    Text(String),
    Bool(bool),
}

impl Acc {
    fn from(v: Value<'_>) -> Self {
        match v {
            Value::Int(v) => Acc::Int(v),
            Value::Float(v) => Acc::Float(v),
            Value::Bytes(b) => Acc::Text(String::from_utf8_lossy(b).into_owned()),
            Value::Bool(b) => Acc::Bool(b),
        }
    }
}

fn push_computed(out: &mut Computed, value: Option<Acc>) {
    match (out, value) {
        (Computed::Int(v), Some(Acc::Int(x))) => v.push(Some(x)),
        (Computed::Float(v), Some(Acc::Float(x))) => v.push(Some(x)),
        (Computed::Text(v), Some(Acc::Text(x))) => v.push(Some(x)),
        (Computed::Bool(v), Some(Acc::Bool(x))) => v.push(Some(x)),
        (out, _) => out.push_value(None),
    }
}

/// [`pick`] for a group without retracts: first values need no row kinds.
fn pick_among_adds(c: &Column, rows: &[RowRef], store: &BatchStore) -> Option<RowRef> {
    match c.field.function {
        AggFunction::FirstValue => rows.first().copied(),
        AggFunction::FirstNonNullValue => rows.iter().find(|&&r| !store.is_null(r, c.slot)).copied(),
        _ => pick(c, rows, store),
    }
}

/// The row whose value a picking aggregate keeps, `None` for null. (Last values are
/// the builder's: see [`Column::newest`].)
fn pick(c: &Column, rows: &[RowRef], store: &BatchStore) -> Option<RowRef> {
    let is_null = |r: RowRef| store.is_null(r, c.slot);
    let adds = || rows.iter().copied().filter(|&r| !store.kind(r).is_retract());
    match c.field.function {
        AggFunction::FirstValue => adds().next(),
        AggFunction::FirstNonNullValue => adds().find(|&r| !is_null(r)),
        AggFunction::Min | AggFunction::Max => {
            let wanted =
                if c.field.function == AggFunction::Min { Ordering::Less } else { Ordering::Greater };
            let mut best: Option<(RowRef, Value<'_>)> = None;
            for r in adds() {
                let Some(v) = store.value(r, c.slot) else { continue };
                if best.as_ref().is_none_or(|(_, b)| v.compare(b) == wanted) {
                    best = Some((r, v));
                }
            }
            best.map(|(r, _)| r)
        }
        _ => None,
    }
}
