//! A naive, obviously correct model of the merge contract, and helpers to build runs.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::{AggFunction, MergeFunction, Run};

/// One input row of the test schema (k, v, seq, kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub key: i64,
    pub value: i64,
    pub seq: i64,
    pub kind: u8,
}

pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, false),
        Field::new("seq", DataType::Int64, false),
        Field::new("kind", DataType::Utf8, false),
    ]))
}

const KINDS: [&str; 4] = ["+I", "-U", "+U", "-D"];

pub fn batch(rows: &[Row]) -> RecordBatch {
    let col = |f: fn(&Row) -> i64| Arc::new(Int64Array::from(rows.iter().map(f).collect::<Vec<_>>()));
    let kinds = StringArray::from(rows.iter().map(|r| KINDS[r.kind as usize]).collect::<Vec<_>>());
    RecordBatch::try_new(schema(), vec![col(|r| r.key), col(|r| r.value), col(|r| r.seq), Arc::new(kinds)])
        .unwrap()
}

/// A run whose rows are cut into batches at `cuts` (positions; duplicates give empty batches).
pub fn run(rows: &[Row], cuts: &[usize]) -> Run {
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (rows.len() + 1)).collect();
    bounds.push(0);
    bounds.push(rows.len());
    bounds.sort_unstable();
    let batches = bounds.windows(2).map(|w| batch(&rows[w[0]..w[1]])).collect();
    Run::from_batches(schema(), batches)
}

/// [`run`] with the key as text (see [`text_key`]).
pub fn text_run(rows: &[Row], cuts: &[usize]) -> Run {
    let Run { batches, .. } = run(rows, cuts);
    let schema = text_schema();
    let batch_schema = schema.clone();
    let batches = batches.map(move |b| {
        let b = b?;
        let keys = b.column(0).as_primitive::<Int64Type>().iter().map(|k| k.map(text_key));
        let mut columns = b.columns().to_vec();
        columns[0] = Arc::new(StringArray::from_iter(keys));
        RecordBatch::try_new(batch_schema.clone(), columns)
    });
    Run { schema, batches: Box::new(batches) }
}

fn text_schema() -> SchemaRef {
    let mut fields: Vec<Field> = schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    fields[0] = Field::new("k", DataType::Utf8, false);
    Arc::new(Schema::new(fields))
}

/// Key `k` (0 to 99999) as text that sorts as `k` does, whose first 14 bytes ten keys
/// share: their digests tie and the whole keys decide.
pub fn text_key(k: i64) -> String {
    format!("{:0>4}{}{}", k / 10, "-".repeat(10), k % 10)
}

fn key_of_text(text: &str) -> i64 {
    let number = |s: &str| s.parse::<i64>().expect("a key made by text_key");
    number(&text[..4]) * 10 + number(&text[text.len() - 1..])
}

/// Output rows as (key, value, kind) triples.
pub fn rows_of(batches: &[RecordBatch]) -> Vec<(i64, i64, u8)> {
    let mut out = Vec::new();
    for b in batches {
        let k: Int64Array = match b.column(0).data_type() {
            DataType::Utf8 => b.column(0).as_string::<i32>().iter().map(|t| t.map(key_of_text)).collect(),
            _ => b.column(0).as_primitive::<Int64Type>().clone(),
        };
        let v = b.column(1).as_primitive::<Int64Type>();
        let kind = b.column(3).as_string::<i32>();
        for i in 0..b.num_rows() {
            let code = KINDS.iter().position(|s| *s == kind.value(i)).unwrap() as u8;
            // A null value (a retracted aggregate) shows as i64::MIN, as in `expected`.
            out.push((k.value(i), if v.is_null(i) { i64::MIN } else { v.value(i) }, code));
        }
    }
    out
}

fn is_retract(kind: u8) -> bool {
    kind == 1 || kind == 3
}

/// How the reference orders versions: arrival only, by `seq` as a user sequence, or by
/// `seq` as the system sequence (retract before add on equal numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Arrival,
    Sequence,
    SystemSequence,
}

/// The contract, written plainly (Paimon's read path): sort every row by (key, version),
/// group by key, drop retracts under ignore_delete, pass a lone version through, fold
/// two or more, keep adds as `+I` (or, with `drop_deletes: false`, every row with the kind
/// Paimon's merge gives it). `None` when the merge must fail.
pub fn expected(runs: &[Vec<Row>], order: Order, merge: &MergeFunction) -> Option<Vec<(i64, i64, u8)>> {
    let mut all: Vec<(usize, usize, Row)> = runs
        .iter()
        .enumerate()
        .flat_map(|(r, rows)| rows.iter().enumerate().map(move |(p, row)| (r, p, *row)))
        .collect();
    all.sort_by_key(|&(run, pos, row)| {
        let version = match order {
            Order::Arrival => (0, false),
            Order::Sequence => (row.seq, false),
            Order::SystemSequence => (row.seq, !is_retract(row.kind)),
        };
        (row.key, version, run, pos)
    });
    let mut out = Vec::new();
    for group in all.chunk_by(|a, b| a.2.key == b.2.key) {
        let mut rows: Vec<Row> = group.iter().map(|g| g.2).collect();
        if let MergeFunction::None = merge {
            out.extend(rows.iter().map(|r| (r.key, r.value, r.kind)));
            continue;
        }
        if ignores_deletes(merge) {
            rows.retain(|r| !is_retract(r.kind));
        }
        let folded = match rows.as_slice() {
            [] => continue,
            [single] => Some((single.value, single.kind)),
            _ => fold(&rows, merge)?,
        };
        match folded {
            Some((value, kind)) if keeps_kinds(merge) => out.push((rows[0].key, value, kind)),
            Some((value, kind)) if !is_retract(kind) => out.push((rows[0].key, value, 0)),
            _ => {}
        }
    }
    Some(out)
}

fn keeps_kinds(merge: &MergeFunction) -> bool {
    match merge {
        MergeFunction::None => unreachable!(),
        MergeFunction::Deduplicate { drop_deletes, .. }
        | MergeFunction::FirstRow { drop_deletes, .. }
        | MergeFunction::PartialUpdate { drop_deletes, .. }
        | MergeFunction::Aggregate { drop_deletes, .. } => !drop_deletes,
    }
}

fn ignores_deletes(merge: &MergeFunction) -> bool {
    match merge {
        MergeFunction::None => false,
        MergeFunction::Deduplicate { ignore_delete, .. }
        | MergeFunction::FirstRow { ignore_delete, .. }
        | MergeFunction::PartialUpdate { ignore_delete, .. }
        | MergeFunction::Aggregate { ignore_delete, .. } => *ignore_delete,
    }
}

/// Two versions or more of one key, as (value, Paimon's kind): `Some(None)` for no row,
/// `None` for an error.
fn fold(rows: &[Row], merge: &MergeFunction) -> Option<Option<(i64, u8)>> {
    let newest = rows.last().unwrap();
    Some(match merge {
        MergeFunction::None => unreachable!(),
        MergeFunction::Deduplicate { .. } => Some((newest.value, newest.kind)),
        MergeFunction::FirstRow { .. } => {
            if rows.iter().any(|r| is_retract(r.kind)) {
                return None;
            }
            Some((rows[0].value, rows[0].kind))
        }
        // The test schema's value is never null: partial-update keeps the newest add's.
        MergeFunction::PartialUpdate { remove_record_on_delete, .. } => {
            let (mut value, mut deleted, mut inserted, mut filled) = (0, false, false, false);
            for r in rows {
                deleted = false;
                if !is_retract(r.kind) {
                    (value, inserted, filled) = (r.value, true, true);
                    continue;
                }
                if !filled {
                    (value, filled) = (r.value, true);
                }
                if !remove_record_on_delete {
                    return None;
                }
                if r.kind == 3 {
                    (value, deleted) = (r.value, true);
                }
            }
            Some((value, if deleted || !inserted { 3 } else { 0 }))
        }
        MergeFunction::Aggregate { fields, default, remove_record_on_delete, .. } => {
            let field = fields.iter().find(|(n, _)| n == "v").map(|(_, f)| f.clone());
            let field = field.unwrap_or_else(|| crate::AggregateField::new(*default));
            let (mut acc, mut deleted, mut first) = (None::<i64>, false, true);
            for r in rows {
                deleted = *remove_record_on_delete && r.kind == 3;
                if deleted {
                    acc = Some(r.value);
                    continue;
                }
                if is_retract(r.kind) {
                    if field.ignore_retract {
                        continue;
                    }
                    acc = match field.function {
                        AggFunction::Sum => Some(acc.map_or(Some(-r.value), |a| a.checked_sub(r.value))?),
                        AggFunction::LastValue | AggFunction::LastNonNullValue => None,
                        _ => return None,
                    };
                } else {
                    acc = Some(match (field.function, acc) {
                        (AggFunction::Sum, Some(a)) => a.checked_add(r.value)?,
                        (AggFunction::Max, Some(a)) => a.max(r.value),
                        (AggFunction::FirstValue, Some(a)) if !first => a,
                        _ => r.value,
                    });
                    first = false;
                }
            }
            // A null result cannot be shown in the non-null test schema: the callers avoid it.
            Some((acc.unwrap_or(i64::MIN), if deleted { 3 } else { 0 }))
        }
    })
}
