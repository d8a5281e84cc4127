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

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Field};

use super::value::{kind_of, read, Value, ValueKind};
use crate::error::{invalid, Result};
use crate::merge::store::{BatchStore, RowRef};

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
}

const NAMES: [(&str, AggFunction); 14] = [
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
];

/// Paimon functions merge-core does not implement: named in the error.
const NOT_IMPLEMENTED: [&str; 8] = [
    "merge_map_with_keytime",
    "nested_update",
    "nested_partial_update",
    "hll_sketch",
    "theta_sketch",
    "rbm32",
    "rbm64",
    "primary-key",
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

/// The numeric type of a sum or product column.
#[derive(Clone, Copy)]
enum Number {
    /// Integers and decimals (unscaled), with the column's range and decimal scale.
    Int { min: i128, max: i128, scale: i8, decimal: bool },
    /// Floats; `single`: float32, whose arithmetic rounds to float32 at every step.
    Float { single: bool },
}

impl Number {
    fn of(data_type: &DataType) -> Option<Self> {
        use DataType::*;
        let int = |min: i128, max: i128| Some(Self::Int { min, max, scale: 0, decimal: false });
        match data_type {
            Int8 => int(i8::MIN.into(), i8::MAX.into()),
            Int16 => int(i16::MIN.into(), i16::MAX.into()),
            Int32 => int(i32::MIN.into(), i32::MAX.into()),
            Int64 => int(i64::MIN.into(), i64::MAX.into()),
            UInt8 => int(0, u8::MAX.into()),
            UInt16 => int(0, u16::MAX.into()),
            UInt32 => int(0, u32::MAX.into()),
            UInt64 => int(0, u64::MAX.into()),
            Decimal128(p, s) => {
                let bound = 10i128.pow(u32::from(*p)) - 1;
                Some(Self::Int { min: -bound, max: bound, scale: *s, decimal: true })
            }
            Float32 => Some(Self::Float { single: true }),
            Float64 => Some(Self::Float { single: false }),
            _ => None,
        }
    }

    fn int(self, v: Option<i128>) -> Result<Acc, AccError> {
        match (self, v) {
            (Self::Int { min, max, .. }, Some(v)) if (min..=max).contains(&v) => Ok(Acc::Int(v)),
            _ => Err(AccError::Overflow),
        }
    }

    fn float(self, v: f64) -> Acc {
        match self {
            Self::Float { single: true } => Acc::Float(v as f32 as f64),
            _ => Acc::Float(v),
        }
    }

    fn scale(self) -> i8 {
        match self {
            Self::Int { scale, .. } => scale,
            Self::Float { .. } => 0,
        }
    }

    fn is_decimal(self) -> bool {
        matches!(self, Self::Int { decimal: true, .. })
    }
}

/// `10^n` for a decimal scale (0 for a negative scale, which behaves as an integer here).
fn pow10(scale: i8) -> i128 {
    10i128.pow(u32::try_from(scale).unwrap_or(0))
}

/// `n / d` rounded half away from zero (Java's `RoundingMode.HALF_UP`).
fn div_half_up(n: i128, d: i128) -> Option<i128> {
    let (q, r) = (n.checked_div(d)?, n.checked_rem(d)?);
    let away = r.checked_abs()?.checked_mul(2)? >= d.checked_abs()?;
    Some(if away { q + n.signum() * d.signum() } else { q })
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.abs()
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

struct SumAgg(Number);

impl SumAgg {
    fn combine(&self, a: Value, b: Value, subtract: bool) -> Result<Acc, AccError> {
        match (a, b) {
            (Value::Int(a), Value::Int(b)) => {
                self.0.int(if subtract { a.checked_sub(b) } else { a.checked_add(b) })
            }
            (Value::Float(a), Value::Float(b)) => Ok(self.0.float(if subtract { a - b } else { a + b })),
            _ => unreachable!("a sum column holds numbers of one kind"),
        }
    }
}

impl Accumulator for SumAgg {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        state.acc = match null_or_other(&state.acc, &input, cx) {
            Some(either) => either,
            None => self.combine(cx.value(&state.acc).unwrap(), cx.value(&input).unwrap(), false)?,
        };
        Ok(())
    }

    fn retract(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        if cx.is_null(&input) {
            return Ok(());
        }
        state.acc = match cx.value(&state.acc) {
            None => match cx.value(&input).unwrap() {
                Value::Int(v) => self.0.int(v.checked_neg())?,
                Value::Float(v) => self.0.float(-v),
                _ => unreachable!("a sum column holds numbers"),
            },
            Some(acc) => self.combine(acc, cx.value(&input).unwrap(), true)?,
        };
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Compute
    }
}

struct ProductAgg(Number);

impl Accumulator for ProductAgg {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        state.acc = match null_or_other(&state.acc, &input, cx) {
            Some(either) => either,
            None => match (cx.value(&state.acc).unwrap(), cx.value(&input).unwrap()) {
                // Decimals: the exact product, rounded half up to the column's scale.
                (Value::Int(a), Value::Int(b)) => {
                    let exact = a.checked_mul(b);
                    self.0.int(exact.and_then(|p| div_half_up(p, pow10(self.0.scale()))))?
                }
                (Value::Float(a), Value::Float(b)) => self.0.float(a * b),
                _ => unreachable!("a product column holds numbers of one kind"),
            },
        };
        Ok(())
    }

    fn retract(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        if cx.is_null(&state.acc) || cx.is_null(&input) {
            return Ok(());
        }
        state.acc = match (cx.value(&state.acc).unwrap(), cx.value(&input).unwrap()) {
            (Value::Int(_), Value::Int(0)) => return Err(AccError::Division),
            // Integers: truncating division, as Java's.
            (Value::Int(a), Value::Int(b)) if !self.0.is_decimal() => self.0.int(a.checked_div(b))?,
            // Decimals: the exact quotient (an error if it does not terminate, as Java's
            // BigDecimal.divide), rounded half up to the column's scale.
            (Value::Int(a), Value::Int(b)) => {
                let mut rest = b.abs() / gcd(a, b);
                for p in [2, 5] {
                    while rest % p == 0 {
                        rest /= p;
                    }
                }
                if rest != 1 {
                    return Err(AccError::Division);
                }
                self.0.int(a.checked_mul(pow10(self.0.scale())).and_then(|n| div_half_up(n, b)))?
            }
            (Value::Float(a), Value::Float(b)) => self.0.float(a / b),
            _ => unreachable!("a product column holds numbers of one kind"),
        };
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Compute
    }
}

/// Java's order of values for min and max (`Float.compare` for floats: `-0.0 < 0.0`,
/// every NaN above everything and equal to each other).
pub(crate) fn java_compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Float(a), Value::Float(b)) => match (a.is_nan(), b.is_nan()) {
            (false, false) => a.total_cmp(b),
            (x, y) => x.cmp(&y),
        },
        _ => a.compare(b),
    }
}

/// min (`keep: Less`) and max (`keep: Greater`).
struct Extreme {
    keep: Ordering,
}

impl Accumulator for Extreme {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        if let Some(either) = null_or_other(&state.acc, &input, cx) {
            state.acc = either;
            return Ok(());
        }
        let order = java_compare(&cx.value(&state.acc).unwrap(), &cx.value(&input).unwrap());
        // On a tie min takes the input and max keeps the accumulator, as Paimon's do.
        let keep_acc = match self.keep {
            Ordering::Less => order == Ordering::Less,
            _ => order != Ordering::Less,
        };
        if !keep_acc {
            state.acc = input;
        }
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Pick
    }
}

struct LastValueAgg;

impl Accumulator for LastValueAgg {
    fn agg(&self, state: &mut State, input: Acc, _cx: &Cx) -> Result<(), AccError> {
        state.acc = input;
        Ok(())
    }

    fn retract(&self, state: &mut State, _input: Acc, _cx: &Cx) -> Result<(), AccError> {
        state.acc = Acc::Null;
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Pick
    }
}

struct LastNonNullAgg;

impl Accumulator for LastNonNullAgg {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        if !cx.is_null(&input) {
            state.acc = input;
        }
        Ok(())
    }

    fn retract(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        if !cx.is_null(&input) {
            state.acc = Acc::Null;
        }
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Pick
    }
}

struct FirstValueAgg;

impl Accumulator for FirstValueAgg {
    fn agg(&self, state: &mut State, input: Acc, _cx: &Cx) -> Result<(), AccError> {
        if !state.initialized {
            state.initialized = true;
            state.acc = input;
        }
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Pick
    }
}

struct FirstNonNullAgg;

impl Accumulator for FirstNonNullAgg {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        if !state.initialized && !cx.is_null(&input) {
            state.initialized = true;
            state.acc = input;
        }
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Pick
    }
}

/// Java's `Character.isWhitespace`, which Paimon's blank test uses.
fn java_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | '\u{1C}'..='\u{1F}')
        || (c.is_whitespace() && !matches!(c, '\u{A0}' | '\u{2007}' | '\u{202F}' | '\u{85}'))
}

fn is_blank(s: &str) -> bool {
    s.chars().all(java_whitespace)
}

struct ListAggAgg {
    delimiter: String,
    distinct: bool,
}

impl Accumulator for ListAggAgg {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        let text = |acc: &Acc| -> Option<String> {
            cx.value(acc).map(|v| match v {
                Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                _ => unreachable!("a listagg column holds strings"),
            })
        };
        let Some(input_text) = text(&input).filter(|s| !is_blank(s)) else { return Ok(()) };
        let Some(mut joined) = text(&state.acc).filter(|s| !is_blank(s)) else {
            state.acc = input;
            return Ok(());
        };
        if self.distinct {
            // Tokens of the accumulated string are taken as they are; the input's are added
            // once each, blank ones skipped.
            let mut seen: Vec<String> = joined.split(self.delimiter.as_str()).map(str::to_owned).collect();
            for token in input_text.split(self.delimiter.as_str()) {
                if !is_blank(token) && !seen.iter().any(|s| s == token) {
                    seen.push(token.to_owned());
                    joined.push_str(&self.delimiter);
                    joined.push_str(token);
                }
            }
        } else {
            joined.push_str(&self.delimiter);
            joined.push_str(&input_text);
        }
        state.acc = Acc::Text(joined);
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Compute
    }
}

struct BoolAgg {
    and: bool,
}

impl Accumulator for BoolAgg {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        state.acc = match null_or_other(&state.acc, &input, cx) {
            Some(either) => either,
            None => match (cx.value(&state.acc).unwrap(), cx.value(&input).unwrap()) {
                (Value::Bool(a), Value::Bool(b)) => Acc::Bool(if self.and { a && b } else { a || b }),
                _ => unreachable!("a boolean column holds booleans"),
            },
        };
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Compute
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

fn same(child: &ArrayRef) -> ArrayRef {
    child.clone()
}

/// The key column of map entries.
fn map_keys(entries: &ArrayRef) -> ArrayRef {
    entries.as_struct().column(0).clone()
}

struct CollectAgg {
    distinct: bool,
    set_semantics: bool,
}

impl Accumulator for CollectAgg {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        let (acc, new) = (cx.items(&state.acc), cx.items(&input));
        if acc.is_none() && new.is_none() {
            state.acc = Acc::Null;
            return Ok(());
        }
        if (acc.is_none() || new.is_none()) && !self.distinct {
            if acc.is_none() {
                state.acc = input;
            }
            return Ok(());
        }
        let mut items: Vec<(u32, u32)> = Vec::new();
        let add_once = |items: &mut Vec<(u32, u32)>, item| {
            if !items.iter().any(|&have| items_equal(cx, have, item, same)) {
                items.push(item);
            }
        };
        for item in acc.into_iter().flatten() {
            match self.distinct && self.set_semantics {
                true => add_once(&mut items, item),
                false => items.push(item),
            }
        }
        for item in new.into_iter().flatten() {
            match self.distinct {
                true => add_once(&mut items, item),
                false => items.push(item),
            }
        }
        state.acc = Acc::Items(items);
        Ok(())
    }

    /// Each retracted element removes one equal element, the first.
    fn retract(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        let Some(mut items) = cx.items(&state.acc) else {
            state.acc = Acc::Null;
            return Ok(());
        };
        let retracted = cx.items(&input).unwrap_or_default();
        if retracted.is_empty() {
            return Ok(());
        }
        for gone in retracted {
            if let Some(at) = items.iter().position(|&have| items_equal(cx, have, gone, same)) {
                items.remove(at);
            }
        }
        state.acc = Acc::Items(items);
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Items
    }
}

struct MergeMapAgg;

impl Accumulator for MergeMapAgg {
    /// The union of the entries, a later entry replacing an earlier one of an equal key
    /// in its place (Paimon's hash map leaves the order unspecified).
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        let (Some(acc), Some(new)) = (cx.items(&state.acc), cx.items(&input)) else {
            if cx.is_null(&state.acc) {
                state.acc = input;
            }
            return Ok(());
        };
        let mut entries: Vec<(u32, u32)> = Vec::new();
        for entry in acc.into_iter().chain(new) {
            match entries.iter().position(|&have| items_equal(cx, have, entry, map_keys)) {
                Some(at) => entries[at] = entry,
                None => entries.push(entry),
            }
        }
        state.acc = Acc::Items(entries);
        Ok(())
    }

    /// Removes every entry whose key the retracted map holds.
    fn retract(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        let Some(acc) = cx.items(&state.acc) else {
            state.acc = Acc::Null;
            return Ok(());
        };
        let retracted = cx.items(&input).unwrap_or_default();
        if retracted.is_empty() {
            return Ok(());
        }
        let mut entries: Vec<(u32, u32)> = Vec::new();
        for entry in acc {
            if retracted.iter().any(|&gone| items_equal(cx, gone, entry, map_keys)) {
                continue;
            }
            match entries.iter().position(|&have| items_equal(cx, have, entry, map_keys)) {
                Some(at) => entries[at] = entry,
                None => entries.push(entry),
            }
        }
        state.acc = Acc::Items(entries);
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_up_division_rounds_away_from_zero() {
        assert_eq!(div_half_up(25, 10), Some(3));
        assert_eq!(div_half_up(-25, 10), Some(-3));
        assert_eq!(div_half_up(24, 10), Some(2));
        assert_eq!(div_half_up(-26, 10), Some(-3));
    }

    #[test]
    fn blank_is_javas_whitespace() {
        assert!(is_blank("") && is_blank(" \t\n\u{1F}"));
        assert!(!is_blank("\u{A0}") && !is_blank(" a "));
    }

    #[test]
    fn nan_sorts_above_everything_for_min_and_max() {
        let (nan, neg_nan) = (Value::Float(f64::NAN), Value::Float(-f64::NAN));
        assert_eq!(java_compare(&nan, &Value::Float(f64::INFINITY)), Ordering::Greater);
        assert_eq!(java_compare(&neg_nan, &Value::Float(1.0)), Ordering::Greater);
        assert_eq!(java_compare(&nan, &neg_nan), Ordering::Equal);
        assert_eq!(java_compare(&Value::Float(-0.0), &Value::Float(0.0)), Ordering::Less);
    }
}
