//! Property tests: both engines equal the naive reference, for every merge function,
//! batch cut and output batch size; comparison counts stay within their bounds.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema};
use proptest::prelude::*;

use super::reference::{expected, rows_of, run, text_run, Order, Row};
use crate::{merge, AggFunction, AggregateField, Algorithm, MergeFunction, MergeOptions, MergeStream};

const ALGORITHMS: [Algorithm; 3] = [Algorithm::LoserTree, Algorithm::PaimonLoserTree, Algorithm::Heap];

fn merge_functions() -> Vec<MergeFunction> {
    let mut all = vec![MergeFunction::None];
    for a in [false, true] {
        for drop_deletes in [true, false] {
            all.push(MergeFunction::FirstRow { ignore_delete: a, drop_deletes });
        }
        for b in [false, true] {
            all.push(MergeFunction::Deduplicate { ignore_delete: a, drop_deletes: b });
            if !(a && b) {
                for drop in [true, false] {
                    let mut pu = MergeFunction::partial_update();
                    if let MergeFunction::PartialUpdate {
                        ignore_delete,
                        remove_record_on_delete,
                        drop_deletes,
                        ..
                    } = &mut pu
                    {
                        (*ignore_delete, *remove_record_on_delete, *drop_deletes) = (a, b, drop);
                    }
                    all.push(pu);
                }
            }
        }
    }
    use AggFunction::*;
    for (function, ignore_retract) in
        [(Sum, false), (Max, true), (Max, false), (FirstValue, true), (LastValue, false)]
    {
        for (ignore_delete, remove_record_on_delete) in [(false, false), (true, false), (false, true)] {
            if ignore_retract && remove_record_on_delete {
                continue; // Paimon refuses the pair
            }
            let field = AggregateField { ignore_retract, ..AggregateField::new(function) };
            for drop_deletes in [true, false] {
                all.push(MergeFunction::Aggregate {
                    fields: vec![("v".into(), field.clone())],
                    default: LastNonNullValue,
                    remove_record_on_delete,
                    ignore_delete,
                    drop_deletes,
                });
            }
        }
    }
    all
}

const ORDERS: [Order; 3] = [Order::Arrival, Order::Sequence, Order::SystemSequence];

/// Sorted runs of rows; keys strictly increasing in a run unless `duplicates`.
fn runs_strategy(max_runs: usize, key_range: i64, duplicates: bool) -> impl Strategy<Value = Vec<Vec<Row>>> {
    let row = (0..key_range, 0..4i64, 0..4u8).prop_map(|(key, seq, kind)| Row { key, value: 0, seq, kind });
    prop::collection::vec(prop::collection::vec(row, 0..40), 0..=max_runs).prop_map(move |runs| {
        let mut next_value = 0;
        runs.into_iter()
            .map(|mut rows| {
                rows.sort_by_key(|r| r.key);
                if !duplicates {
                    rows.dedup_by_key(|r| r.key);
                }
                for r in &mut rows {
                    r.value = next_value;
                    next_value += 1;
                }
                rows
            })
            .collect()
    })
}

type Merged = (Vec<(i64, i64, u8)>, Vec<usize>, MergeStream);

/// The merged rows, the output batch sizes and the stream; `None` on an input error.
fn try_merge(runs: &[Vec<Row>], cuts: &[usize], options: MergeOptions) -> Option<Merged> {
    try_merge_runs(runs.iter().map(|rows| run(rows, cuts)).collect(), options)
}

fn try_merge_runs(inputs: Vec<crate::Run>, options: MergeOptions) -> Option<Merged> {
    let mut stream = merge(inputs, options).unwrap();
    let batches: Vec<_> = match stream.by_ref().collect::<Result<_, _>>() {
        Ok(batches) => batches,
        Err(crate::MergeError::InvalidInput(_)) => return None,
        Err(e) => panic!("unexpected error {e}"),
    };
    let sizes = batches.iter().map(|b| b.num_rows()).collect();
    Some((rows_of(&batches), sizes, stream))
}

fn run_merge(runs: &[Vec<Row>], cuts: &[usize], options: MergeOptions) -> Merged {
    try_merge(runs, cuts, options).expect("valid input")
}

fn options(merge: MergeFunction, algorithm: Algorithm, order: Order, batch_size: usize) -> MergeOptions {
    let mut o = MergeOptions::new(&["k"]);
    o.merge = merge;
    o.algorithm = algorithm;
    o.batch_size = batch_size;
    o.versions.row_kind = Some("kind".into());
    match order {
        Order::Arrival => {}
        Order::Sequence => o.versions.sequence = vec!["seq".into()],
        Order::SystemSequence => o.versions.system_sequence = Some("seq".into()),
    }
    o
}

/// Merge functions with a sequence column must not be first-row (Paimon refuses it).
fn applies(merge: &MergeFunction, order: Order) -> bool {
    !(matches!(merge, MergeFunction::FirstRow { .. }) && order == Order::Sequence)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn engines_match_reference(
        runs in runs_strategy(9, 30, false),
        cuts in prop::collection::vec(0usize..50, 0..4),
        order in prop::sample::select(ORDERS.to_vec()),
        batch_size in prop_oneof![Just(1usize), Just(7), 1usize..64],
    ) {
        for merge_fn in merge_functions().into_iter().filter(|m| applies(m, order)) {
            let want = expected(&runs, order, &merge_fn);
            for algorithm in ALGORITHMS {
                let merged = try_merge(&runs, &cuts, options(merge_fn.clone(), algorithm, order, batch_size));
                let (got, sizes, stream) = match (&want, merged) {
                    (None, None) => continue,
                    (Some(_), None) => return Err(TestCaseError::fail(format!("{algorithm:?} {merge_fn:?} refused valid input"))),
                    (None, Some(_)) => return Err(TestCaseError::fail(format!("{algorithm:?} {merge_fn:?} took a retract it cannot"))),
                    (Some(_), Some(merged)) => merged,
                };
                let want = want.as_ref().unwrap();
                prop_assert_eq!(&got, want, "{:?} {:?}", algorithm, merge_fn);
                // Every batch but the last is exactly batch_size rows.
                if let Some((_, full)) = sizes.split_last() {
                    prop_assert!(full.iter().all(|&n| n == batch_size));
                }
                let stats = stream.stats();
                prop_assert_eq!(stats.rows_out as usize, want.len());
                prop_assert_eq!(stats.rows_in as usize, runs.iter().map(Vec::len).sum::<usize>());
            }
        }
    }

    #[test]
    fn duplicates_inside_runs_without_folding(
        runs in runs_strategy(6, 8, true),
        cuts in prop::collection::vec(0usize..50, 0..4),
        order in prop::sample::select(ORDERS.to_vec()),
    ) {
        let want = expected(&runs, order, &MergeFunction::None).unwrap();
        for algorithm in ALGORITHMS {
            let (got, _, _) = run_merge(&runs, &cuts, options(MergeFunction::None, algorithm, order, 5));
            prop_assert_eq!(&got, &want, "{:?}", algorithm);
        }
    }

    /// Text keys whose digests tie for ten keys at a time, so that the engines must tell
    /// a new key from another version of the last one by the whole keys.
    #[test]
    fn text_keys_with_tied_digests_match_reference(
        runs in runs_strategy(9, 40, false),
        cuts in prop::collection::vec(0usize..50, 0..4),
        order in prop::sample::select(ORDERS.to_vec()),
    ) {
        for merge_fn in [MergeFunction::default(), MergeFunction::partial_update(), MergeFunction::None] {
            let want = expected(&runs, order, &merge_fn);
            for algorithm in ALGORITHMS {
                let inputs = runs.iter().map(|rows| text_run(rows, &cuts)).collect();
                let merged = try_merge_runs(inputs, options(merge_fn.clone(), algorithm, order, 8));
                prop_assert_eq!(merged.is_some(), want.is_some(), "{:?} {:?}", algorithm, merge_fn);
                if let (Some((got, _, stream)), Some(want)) = (merged, &want) {
                    prop_assert_eq!(&got, want, "{:?} {:?}", algorithm, merge_fn);
                    prop_assert_eq!(stream.stats().rows_out as usize, want.len());
                }
            }
        }
    }

    /// Sequence columns of any orderable type order versions as their values do (here
    /// the integer sequence cast to text, floats, decimals and bytes, which keep its order).
    #[test]
    fn sequence_columns_of_every_orderable_type_match_reference(
        runs in runs_strategy(6, 20, false),
        cuts in prop::collection::vec(0usize..50, 0..3),
        as_type in prop::sample::select(vec![
            DataType::Utf8,
            DataType::Utf8View,
            DataType::Float64,
            DataType::Decimal128(10, 2),
            DataType::Binary,
        ]),
    ) {
        for merge_fn in [MergeFunction::default(), MergeFunction::partial_update()] {
            let want = expected(&runs, Order::Sequence, &merge_fn);
            for algorithm in ALGORITHMS {
                let inputs = runs.iter().map(|rows| with_sequence_as(run(rows, &cuts), &as_type)).collect();
                let merged = try_merge_runs(inputs, options(merge_fn.clone(), algorithm, Order::Sequence, 8));
                prop_assert_eq!(merged.map(|m| m.0), want.clone(), "{:?} {:?} {:?}", as_type, algorithm, merge_fn);
            }
        }
    }

    #[test]
    fn many_runs_few_keys(runs in runs_strategy(300, 6, false), order in prop::sample::select(ORDERS.to_vec())) {
        let merge_fn = MergeFunction::default();
        let want = expected(&runs, order, &merge_fn).unwrap();
        for algorithm in ALGORITHMS {
            let (got, _, _) = run_merge(&runs, &[], options(merge_fn.clone(), algorithm, order, 100));
            prop_assert_eq!(&got, &want, "{:?}", algorithm);
        }
    }
}

/// `run` with its `seq` column (0 to 3) cast to `to`.
fn with_sequence_as(run: crate::Run, to: &DataType) -> crate::Run {
    let mut fields: Vec<Field> = run.schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields[2] = Field::new("seq", to.clone(), false);
    let schema = Arc::new(Schema::new(fields));
    let batch_schema = schema.clone();
    let to = to.clone();
    let batches = run.batches.map(move |b| {
        let b = b?;
        let mut columns = b.columns().to_vec();
        let text = arrow_cast::cast(&columns[2], &DataType::Utf8)?;
        columns[2] = arrow_cast::cast(if to == DataType::Binary { &text } else { &columns[2] }, &to)?;
        RecordBatch::try_new(batch_schema.clone(), columns)
    });
    crate::Run { schema, batches: Box::new(batches) }
}

/// K runs of disjoint interleaved keys: run r holds keys r, r + K, r + 2K, ...
fn disjoint_runs(k: usize, per_run: usize) -> Vec<Vec<Row>> {
    (0..k)
        .map(|r| (0..per_run).map(|i| Row { key: (i * k + r) as i64, value: 0, seq: 0, kind: 0 }).collect())
        .collect()
}

#[test]
fn loser_tree_comparisons_per_row_are_at_most_log2_k_plus_one() {
    for (k, algorithm) in [1usize, 2, 3, 5, 8, 32, 100, 128]
        .into_iter()
        .flat_map(|k| [(k, Algorithm::LoserTree), (k, Algorithm::PaimonLoserTree)])
    {
        let runs = disjoint_runs(k, 200);
        let (got, _, stream) =
            run_merge(&runs, &[], options(MergeFunction::default(), algorithm, Order::Arrival, 1024));
        assert_eq!(got.len(), k * 200);
        let per_row = stream.stats().key_comparisons as f64 / got.len() as f64;
        let bound = (k as f64).log2().ceil() + 1.0;
        assert!(per_row <= bound, "{algorithm:?}, k={k}: {per_row} comparisons per row > {bound}");
    }
}

#[test]
fn all_keys_equal_across_many_runs() {
    let runs: Vec<Vec<Row>> =
        (0..257).map(|r| vec![Row { key: 7, value: r, seq: (r * 7919) % 13, kind: 0 }]).collect();
    for order in ORDERS {
        let want = expected(&runs, order, &MergeFunction::None).unwrap();
        for algorithm in ALGORITHMS {
            let (got, _, _) = run_merge(&runs, &[], options(MergeFunction::None, algorithm, order, 64));
            assert_eq!(got, want, "{algorithm:?}");
        }
    }
}

#[test]
fn no_runs_gives_an_empty_stream() {
    let mut stream = merge(Vec::new(), MergeOptions::new(&["k"])).unwrap();
    assert!(stream.next().is_none());
    assert_eq!(stream.schema().fields().len(), 0);
}
