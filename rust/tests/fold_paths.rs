//! Every shortcut of the folds equals the general path: the builder's newest-value picks
//! (last_value, last_non_null_value, partial-update), the int64 sum, the all-adds
//! aggregate loop and the single-version pass-through, on random histories with nulls,
//! retracts, sequence ties and batch cuts.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use proptest::prelude::*;

use crate::merge::stream::{merge_general_path, merge_group, SharedStats};
use crate::{merge, AggFunction, AggregateField, MergeFunction, MergeOptions, Run};

/// (key, n, s, seq, kind)
type Row = (i64, Option<i64>, Option<&'static str>, i64, u8);

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("n", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("seq", DataType::Int64, false),
        Field::new("kind", DataType::Utf8, false),
    ]))
}

fn batch(rows: &[Row]) -> RecordBatch {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(rows.iter().map(|r| r.1).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| r.2).collect::<StringArray>()),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.3))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| ["+I", "-U", "+U", "-D"][r.4 as usize]))),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

fn runs(histories: &[Vec<Row>], cut: usize) -> Vec<Run> {
    histories
        .iter()
        .map(|rows| {
            let at = cut.min(rows.len());
            Run::from_batches(schema(), vec![batch(&rows[..at]), batch(&rows[at..])])
        })
        .collect()
}

fn functions() -> Vec<MergeFunction> {
    use AggFunction::*;
    let field = |function, ignore_retract| AggregateField { ignore_retract, ..AggregateField::new(function) };
    let mut kept = MergeFunction::partial_update();
    if let MergeFunction::PartialUpdate { drop_deletes, remove_record_on_delete, .. } = &mut kept {
        (*drop_deletes, *remove_record_on_delete) = (false, true);
    }
    let mut all = vec![MergeFunction::partial_update(), kept];
    for (n, s) in [
        (field(Sum, false), field(LastNonNullValue, false)),
        (field(Sum, true), field(LastValue, true)),
        (field(LastValue, false), field(ListAgg, true)),
        (field(LastNonNullValue, true), field(FirstNonNullValue, true)),
        (field(Max, true), field(Min, true)),
        (field(FirstValue, true), field(LastValue, false)),
    ] {
        for remove_record_on_delete in [false, true] {
            if remove_record_on_delete && (n.ignore_retract || s.ignore_retract) {
                continue;
            }
            // Kept kinds (a compaction's) take the same paths.
            for drop_deletes in [true, false] {
                all.push(MergeFunction::Aggregate {
                    fields: vec![("n".into(), n.clone()), ("s".into(), s.clone())],
                    default: LastNonNullValue,
                    remove_record_on_delete,
                    ignore_delete: false,
                    drop_deletes,
                });
            }
        }
    }
    all
}

fn histories() -> impl Strategy<Value = Vec<Vec<Row>>> {
    let row = (
        0..6i64,
        prop::option::of(-3..4i64),
        prop::option::of(prop::sample::select(vec!["a", "b", " ", "zz"])),
        0..3i64,
        prop_oneof![4 => Just(0u8), 1 => Just(1u8), 2 => Just(2u8), 1 => Just(3u8)],
    );
    prop::collection::vec(prop::collection::vec(row, 0..12), 0..6).prop_map(|runs| {
        runs.into_iter()
            .map(|mut rows| {
                rows.sort_by_key(|r| r.0);
                rows.dedup_by_key(|r| r.0);
                rows
            })
            .collect()
    })
}

fn collect(stream: crate::Result<crate::MergeStream>) -> Result<Vec<RecordBatch>, String> {
    stream.and_then(|s| s.collect::<crate::Result<Vec<_>>>()).map_err(|e| e.to_string())
}

/// The same rows (batches cut anywhere), or the same error, from a shortcut (`a`) and
/// the general path (`b`).
fn same_output(
    a: Result<Vec<RecordBatch>, String>,
    b: Result<Vec<RecordBatch>, String>,
    function: &MergeFunction,
) -> Result<(), TestCaseError> {
    match (a, b) {
        (Ok(a), Ok(b)) => {
            let rows = |batches: &[RecordBatch]| batches.iter().map(|b| b.num_rows()).sum::<usize>();
            prop_assert_eq!(rows(&a), rows(&b), "{:?}", function);
            if rows(&a) > 0 {
                let concat = |batches: &[RecordBatch]| {
                    arrow_select::concat::concat_batches(&batches[0].schema(), batches).unwrap()
                };
                prop_assert_eq!(concat(&a), concat(&b), "{:?}", function);
            }
        }
        (Err(a), Err(b)) => prop_assert_eq!(a, b),
        (a, b) => {
            prop_assert!(false, "{:?}: shortcut {:?} but general path {:?}", function, a.err(), b.err())
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn fast_paths_equal_the_general_path(
        histories in histories(),
        cut in 0usize..8,
        with_kinds: bool,
        with_sequence: bool,
        batch_size in prop_oneof![Just(1usize), Just(3), Just(8192)],
    ) {
        for function in functions() {
            let mut options = MergeOptions::new(&["k"]);
            options.merge = function.clone();
            options.batch_size = batch_size;
            if with_kinds {
                options.versions.row_kind = Some("kind".into());
            }
            if with_sequence {
                options.versions.sequence = vec!["seq".into()];
            }
            let fast = collect(merge(runs(&histories, cut), options.clone()));
            let general = collect(merge_general_path(runs(&histories, cut), options));
            same_output(fast, general, &function)?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// A read's group of one run whose keys are each once (a compacted file) passes its
    /// rows as stored where the fold would output them untouched: the same rows as the
    /// general path, retracts left out, kinds `+I`, projected, in batches of at most
    /// `batch_size` rows; the other functions fall back to the merge.
    #[test]
    fn a_lone_run_as_stored_equals_its_merge(
        histories in histories(),
        cut in 0usize..8,
        with_sequence: bool,
        projected: bool,
        batch_size in prop_oneof![Just(1usize), Just(3), Just(8192)],
    ) {
        let lone: Vec<Vec<Row>> = histories.into_iter().take(1).collect();
        let mut all = functions();
        all.push(MergeFunction::default());
        all.push(MergeFunction::Deduplicate { ignore_delete: true, drop_deletes: true });
        all.push(MergeFunction::FirstRow { ignore_delete: false, drop_deletes: true });
        for function in all {
            let mut options = MergeOptions::new(&["k"]);
            options.merge = function.clone();
            options.batch_size = batch_size;
            options.versions.row_kind = Some("kind".into());
            if with_sequence {
                options.versions.sequence = vec!["seq".into()];
            }
            if projected {
                options.columns = Some(vec!["s".into(), "kind".into(), "k".into()]);
            }
            let stats = Arc::new(SharedStats::default());
            let stored = collect(merge_group(runs(&lone, cut), options.clone(), false, stats, true));
            let merged = collect(merge_general_path(runs(&lone, cut), options));
            if let Ok(batches) = &stored {
                prop_assert!(batches.iter().all(|b| b.num_rows() <= batch_size));
            }
            same_output(stored, merged, &function)?;
        }
    }
}
