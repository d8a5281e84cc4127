//! One accumulator per aggregate function, in the shape of Paimon's `FieldAggregator`:
//! `agg` folds in a newer version's value, `retract` takes a version back, and
//! `agg_reversed` folds in a value *older* than those accumulated (partial-update sequence
//! groups), by default `agg` with the two sides swapped. A field that ignores retracts is
//! the wrapper [`IgnoreRetract`], not a flag. [`accumulator`] checks the column's type
//! when the merge is set up, so no function meets a type it cannot take.
//!
//! An accumulated value is an [`Acc`]: picked values stay references to stored rows (the
//! builder gathers them), computed ones are owned numbers or strings, collected list
//! elements and map entries are references to the stored child arrays.
//!
//! Here: the accumulated value and where it reads ([`Cx`]), the trait, the functions'
//! names and options, and the factory; each function, or family of functions, has a
//! file of its own (`sum`, `product` with the `number` helpers they share, `min_max`,
//! `last_value`, `first_value`, `listagg`, `bool_and_or`, `collect`, `merge_map`), as
//! in Paimon's `mergetree/compact/aggregate/`.

mod bool_and_or;
mod collect;
mod first_value;
mod last_value;
mod listagg;
mod merge_map;
mod min_max;
mod number;
mod product;
mod sum;

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Field};

use crate::error::{invalid, Result};
use crate::runs::store::{BatchStore, RowRef};
use crate::runs::value::{kind_of, read, Value, ValueKind};
use bool_and_or::BoolAgg;
use collect::CollectAgg;
use first_value::{FirstNonNullAgg, FirstValueAgg};
use last_value::{LastNonNullAgg, LastValueAgg, PrimaryKeyAgg};
use listagg::ListAggAgg;
use merge_map::MergeMapAgg;
pub(crate) use min_max::java_compare;
use min_max::Extreme;
use number::Number;
use product::ProductAgg;
use sum::SumAgg;

/// A column's running value while one key's versions fold.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Acc {
    Null,
    /// The value of a stored row (gathered when the output is built, never copied).
    Row(RowRef),
    Int(i128),
    Float(f64),
    Text(String),
    Bool(bool),
    /// List elements (collect) or map entries (merge_map), each as (stored batch, index
    /// into that batch's column's child array).
    Items(Vec<(u32, u32)>),
}

/// An accumulator's state for one key: the value, and whether a first-value function
/// has taken its value yet (Paimon keeps that flag in the aggregator and resets it per key).
#[derive(Debug, Clone)]
pub(crate) struct State {
    pub acc: Acc,
    pub initialized: bool,
}

impl Default for State {
    fn default() -> Self {
        Self { acc: Acc::Null, initialized: false }
    }
}

/// What an accumulator could not do; the fold names the column, key and row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AccError {
    /// The function takes no retracts (and the field does not ignore them).
    CannotRetract,
    /// An integer or decimal result left its column's type.
    Overflow,
    /// `product` retracted a zero, or a decimal quotient that does not terminate.
    Division,
}

/// How a function's result reaches the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// The value of one of the key's rows (or null): gathered.
    Pick,
    /// A computed number, string or boolean.
    Compute,
    /// Collected list elements or map entries.
    Items,
}

/// Where an accumulator reads values: the store and the column's view slot and index.
pub(crate) struct Cx<'a> {
    pub store: &'a BatchStore,
    pub slot: usize,
    pub column: usize,
}

impl Cx<'_> {
    /// The value `acc` holds (`None` for a null or for items).
    pub(crate) fn value<'b>(&'b self, acc: &'b Acc) -> Option<Value<'b>> {
        match acc {
            Acc::Null | Acc::Items(_) => None,
            Acc::Row(r) => self.store.value(*r, self.slot),
            Acc::Int(v) => Some(Value::Int(*v)),
            Acc::Float(v) => Some(Value::Float(*v)),
            Acc::Text(s) => Some(Value::Bytes(s.as_bytes())),
            Acc::Bool(b) => Some(Value::Bool(*b)),
        }
    }

    pub(crate) fn is_null(&self, acc: &Acc) -> bool {
        match acc {
            Acc::Null => true,
            Acc::Row(r) => self.store.is_null(*r, self.slot),
            _ => false,
        }
    }

    /// The list elements or map entries `acc` holds (`None` for a null).
    pub(crate) fn items(&self, acc: &Acc) -> Option<Vec<(u32, u32)>> {
        match acc {
            Acc::Items(items) => Some(items.clone()),
            Acc::Row(r) if !self.is_null(acc) => {
                let column = self.store.get(r.batch).batch.column(self.column);
                Some(nested_range(column, r.row as usize).map(|i| (r.batch, i as u32)).collect())
            }
            _ => None,
        }
    }

    /// The child array items of `batch` index into: list elements, or map entries.
    fn children(&self, batch: u32) -> ArrayRef {
        nested_values(self.store.get(batch).batch.column(self.column))
    }
}

/// The child indices of row `row` of a list or map column.
fn nested_range(column: &ArrayRef, row: usize) -> std::ops::Range<usize> {
    let range = |start: usize, end: usize| start..end;
    match column.data_type() {
        DataType::List(_) => {
            let o = column.as_list::<i32>().value_offsets();
            range(o[row] as usize, o[row + 1] as usize)
        }
        DataType::LargeList(_) => {
            let o = column.as_list::<i64>().value_offsets();
            range(o[row] as usize, o[row + 1] as usize)
        }
        DataType::Map(_, _) => {
            let o = column.as_map().value_offsets();
            range(o[row] as usize, o[row + 1] as usize)
        }
        other => unreachable!("items of a {other} column: the setup admits lists and maps only"),
    }
}

/// The child array of a list or map column (a map's entries as one struct array).
pub(crate) fn nested_values(column: &ArrayRef) -> ArrayRef {
    match column.data_type() {
        DataType::List(_) => column.as_list::<i32>().values().clone(),
        DataType::LargeList(_) => column.as_list::<i64>().values().clone(),
        DataType::Map(_, _) => std::sync::Arc::new(column.as_map().entries().clone()),
        other => unreachable!("children of a {other} column: the setup admits lists and maps only"),
    }
}

/// One aggregate function (see the module doc).
pub(crate) trait Accumulator: Send + Sync {
    /// Folds in the value of a newer version.
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError>;

    /// Folds in a value older than the accumulated ones: Paimon's default is `agg` with
    /// the accumulated value as the input and the older one as the accumulator.
    fn agg_reversed(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        let accumulated = std::mem::replace(&mut state.acc, input);
        self.agg(state, accumulated, cx)
    }

    /// Takes a version back (`-U`, `-D`).
    fn retract(&self, _state: &mut State, _input: Acc, _cx: &Cx) -> Result<(), AccError> {
        Err(AccError::CannotRetract)
    }

    /// Whether [`Self::retract`] takes versions back: `false` where it is the default
    /// (an error), so that a write can refuse retracts before anything is stored.
    fn retracts(&self) -> bool {
        false
    }

    fn output(&self) -> Output;
}

/// Skips retracts for a field with `ignore_retract` (Paimon's `FieldIgnoreRetractAgg`; like
/// it, `agg_reversed` is the default one, not the wrapped function's).
struct IgnoreRetract(Box<dyn Accumulator>);

impl Accumulator for IgnoreRetract {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        self.0.agg(state, input, cx)
    }

    fn retract(&self, _state: &mut State, _input: Acc, _cx: &Cx) -> Result<(), AccError> {
        Ok(())
    }

    fn retracts(&self) -> bool {
        true
    }

    fn output(&self) -> Output {
        self.0.output()
    }
}

/// Paimon's aggregate functions that merge-core implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunction {
    /// Sum of the non-null values; a retract subtracts.
    Sum,
    /// Product of the non-null values; a retract divides.
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
    /// Non-blank strings joined in version order.
    ListAgg,
    /// Logical and of the non-null booleans.
    BoolAnd,
    /// Logical or of the non-null booleans.
    BoolOr,
    /// The elements of every list, concatenated; a retract removes its elements.
    Collect,
    /// The entries of every map, newer values replacing older ones; a retract removes its keys.
    MergeMap,
    /// A primary-key column the fold sees as a value: the newest version's, retracts too.
    PrimaryKey,
}

const NAMES: [(&str, AggFunction); 15] = [
    ("sum", AggFunction::Sum),
    ("product", AggFunction::Product),
    ("min", AggFunction::Min),
    ("max", AggFunction::Max),
    ("last_value", AggFunction::LastValue),
    ("last_non_null_value", AggFunction::LastNonNullValue),
    ("first_value", AggFunction::FirstValue),
    ("first_non_null_value", AggFunction::FirstNonNullValue),
    // Paimon's older name, still accepted by its factory.
    ("first_not_null_value", AggFunction::FirstNonNullValue),
    ("listagg", AggFunction::ListAgg),
    ("bool_and", AggFunction::BoolAnd),
    ("bool_or", AggFunction::BoolOr),
    ("collect", AggFunction::Collect),
    ("merge_map", AggFunction::MergeMap),
    ("primary-key", AggFunction::PrimaryKey),
];

/// Paimon functions merge-core does not implement: named in the error.
const NOT_IMPLEMENTED: [&str; 7] = [
    "merge_map_with_keytime",
    "nested_update",
    "nested_partial_update",
    "hll_sketch",
    "theta_sketch",
    "rbm32",
    "rbm64",
];

impl std::str::FromStr for AggFunction {
    type Err = crate::error::MergeError;

    fn from_str(s: &str) -> Result<Self> {
        if let Some((_, f)) = NAMES.iter().find(|(name, _)| *name == s) {
            return Ok(*f);
        }
        if NOT_IMPLEMENTED.contains(&s) {
            return Err(invalid!("Paimon's aggregate function '{s}' is not supported by merge-core"));
        }
        let names: Vec<_> = NAMES.iter().map(|(n, _)| *n).filter(|n| *n != "first_not_null_value").collect();
        Err(invalid!("unknown aggregate function '{s}' (expected one of: {})", names.join(", ")))
    }
}

impl AggFunction {
    /// Paimon's name.
    pub fn name(self) -> &'static str {
        NAMES.iter().find(|(_, f)| *f == self).map_or("?", |(n, _)| *n)
    }
}

/// The aggregation of one column, with its Paimon options.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateField {
    /// The function.
    pub function: AggFunction,
    /// Separator of `listagg` (`fields.<f>.list-agg-delimiter`, default `,`).
    pub delimiter: String,
    /// `listagg` and `collect` keep each value once (`fields.<f>.distinct`).
    pub distinct: bool,
    /// Retracts are skipped for this column (`fields.<f>.ignore-retract`).
    pub ignore_retract: bool,
}

impl AggregateField {
    /// `function` with the default options.
    pub fn new(function: AggFunction) -> Self {
        Self { function, delimiter: ",".into(), distinct: false, ignore_retract: false }
    }
}

/// The accumulator of `field` for `column`, or an error naming both when the function
/// does not apply to the column's type.
pub(crate) fn accumulator(field: &AggregateField, column: &Field) -> Result<Box<dyn Accumulator>> {
    use AggFunction::*;
    let data_type = column.data_type();
    let kind = kind_of(data_type);
    let refuse = |what: &str| {
        invalid!(
            "aggregate function '{}' does not apply to column '{}' of type {data_type}: it takes {what}",
            field.function.name(),
            column.name()
        )
    };
    let number = || Number::of(data_type).ok_or_else(|| refuse("integers, floats or decimals"));
    let inner: Box<dyn Accumulator> = match field.function {
        Sum => Box::new(SumAgg(number()?)),
        Product => Box::new(ProductAgg(number()?)),
        Min | Max if matches!(kind, ValueKind::Other) => return Err(refuse("values of an ordered type")),
        Min => Box::new(Extreme { keep: Ordering::Less }),
        Max => Box::new(Extreme { keep: Ordering::Greater }),
        LastValue => Box::new(LastValueAgg),
        LastNonNullValue => Box::new(LastNonNullAgg),
        PrimaryKey => Box::new(PrimaryKeyAgg),
        FirstValue => Box::new(FirstValueAgg),
        FirstNonNullValue => Box::new(FirstNonNullAgg),
        ListAgg if kind != ValueKind::Text => return Err(refuse("strings")),
        ListAgg if field.distinct && field.delimiter.is_empty() => {
            return Err(invalid!(
                "listagg of column '{}': distinct needs a non-empty delimiter",
                column.name()
            ))
        }
        ListAgg => Box::new(ListAggAgg { delimiter: field.delimiter.clone(), distinct: field.distinct }),
        BoolAnd | BoolOr if kind != ValueKind::Bool => return Err(refuse("booleans")),
        BoolAnd => Box::new(BoolAgg { and: true }),
        BoolOr => Box::new(BoolAgg { and: false }),
        Collect => match data_type {
            DataType::List(element) | DataType::LargeList(element) => Box::new(CollectAgg {
                distinct: field.distinct,
                // Paimon dedups primitive and string elements as a set, others by comparing
                // with what is collected so far (the accumulated list is taken as it is).
                set_semantics: !matches!(kind_of(element.data_type()), ValueKind::Binary | ValueKind::Other),
            }),
            _ => return Err(refuse("lists")),
        },
        MergeMap => match data_type {
            DataType::Map(_, _) => Box::new(MergeMapAgg),
            _ => return Err(refuse("maps")),
        },
    };
    Ok(if field.ignore_retract { Box::new(IgnoreRetract(inner)) } else { inner })
}

/// Either side null: the other (`None` when both are values).
fn null_or_other(acc: &Acc, input: &Acc, cx: &Cx) -> Option<Acc> {
    if cx.is_null(acc) {
        Some(input.clone())
    } else if cx.is_null(input) {
        Some(acc.clone())
    } else {
        None
    }
}

/// Whether two child-array items hold equal values (nulls equal each other; floats equal
/// when their bits are, all NaNs alike, as Java's boxed `equals`).
fn items_equal(cx: &Cx, a: (u32, u32), b: (u32, u32), children: impl Fn(&ArrayRef) -> ArrayRef) -> bool {
    let (x, y) = (children(&cx.children(a.0)), children(&cx.children(b.0)));
    let (i, j) = (a.1 as usize, b.1 as usize);
    match (x.is_null(i), y.is_null(j)) {
        (true, true) => return true,
        (false, false) => {}
        _ => return false,
    }
    match (read(x.as_ref(), i), read(y.as_ref(), j)) {
        (Some(Value::Float(p)), Some(Value::Float(q))) => {
            p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan())
        }
        (Some(p), Some(q)) if kind_of(x.data_type()) != ValueKind::Other => p == q,
        _ => x.slice(i, 1).to_data() == y.slice(j, 1).to_data(),
    }
}
