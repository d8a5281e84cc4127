//! A naive, obviously correct model of the merge contract, and helpers to build runs.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::{MergeFunction, Run};

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

/// Output rows as (key, value, kind) triples.
pub fn rows_of(batches: &[RecordBatch]) -> Vec<(i64, i64, u8)> {
    let mut out = Vec::new();
    for b in batches {
        let k = b.column(0).as_primitive::<Int64Type>();
        let v = b.column(1).as_primitive::<Int64Type>();
        let kind = b.column(3).as_string::<i32>();
        for i in 0..b.num_rows() {
            let code = KINDS.iter().position(|s| *s == kind.value(i)).unwrap() as u8;
            out.push((k.value(i), v.value(i), code));
        }
    }
    out
}

fn is_retract(kind: u8) -> bool {
    kind == 1 || kind == 3
}

/// The contract, written plainly: sort every row by (key, version), group by key, fold.
/// `None` when the merge must fail (a retract the function cannot take).
pub fn expected(
    runs: &[Vec<Row>],
    with_sequence: bool,
    merge: &MergeFunction,
) -> Option<Vec<(i64, i64, u8)>> {
    let mut all: Vec<(usize, usize, Row)> = runs
        .iter()
        .enumerate()
        .flat_map(|(r, rows)| rows.iter().enumerate().map(move |(p, row)| (r, p, *row)))
        .collect();
    all.sort_by_key(|&(run, pos, row)| {
        let seq = if with_sequence { (row.seq, !is_retract(row.kind)) } else { (0, false) };
        (row.key, seq, run, pos)
    });
    let mut out = Vec::new();
    for group in all.chunk_by(|a, b| a.2.key == b.2.key) {
        let rows: Vec<Row> = group.iter().map(|g| g.2).collect();
        let adds = |rows: &[Row]| rows.iter().filter(|r| !is_retract(r.kind)).copied().collect::<Vec<_>>();
        let any_retract = rows.iter().any(|r| is_retract(r.kind));
        let emit = |out: &mut Vec<_>, r: Option<&Row>| out.extend(r.map(|r| (r.key, r.value, 0)));
        match *merge {
            MergeFunction::None => out.extend(rows.iter().map(|r| (r.key, r.value, r.kind))),
            MergeFunction::Deduplicate { ignore_delete, drop_deletes } => {
                let candidates = if ignore_delete { adds(&rows) } else { rows.clone() };
                if let Some(newest) = candidates.last() {
                    if !is_retract(newest.kind) {
                        out.push((newest.key, newest.value, 0));
                    } else if !drop_deletes {
                        out.push((newest.key, newest.value, 3));
                    }
                }
            }
            MergeFunction::FirstRow { ignore_delete } => {
                if any_retract && !ignore_delete {
                    return None;
                }
                emit(&mut out, adds(&rows).first());
            }
            // Every column of the test schema is non-null: the newest add's values win.
            MergeFunction::PartialUpdate { ignore_delete, remove_record_on_delete } => {
                if any_retract && !ignore_delete && !remove_record_on_delete {
                    return None;
                }
                let live = match rows.iter().rposition(|r| r.kind == 3) {
                    Some(last) if remove_record_on_delete && !ignore_delete => &rows[last + 1..],
                    _ => &rows[..],
                };
                emit(&mut out, adds(live).last());
            }
            MergeFunction::Aggregate { .. } => {
                unreachable!("aggregates are checked by the Python oracle tests")
            }
        }
    }
    Some(out)
}
