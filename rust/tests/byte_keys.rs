//! Byte keys in the shapes the loser tree's offset-value codes must get right: long
//! shared heads, keys leaving the head early, prefixes of other keys, empty keys, zero
//! bytes (which equal a chunk's padding), equal keys in many runs. Every engine must
//! merge them as the reference merges the integer keys they stand for.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use proptest::prelude::*;

use super::reference::{expected, rows_of, run, Order, Row};
use crate::{merge, Algorithm, MergeFunction, MergeOptions};

const ALGORITHMS: [Algorithm; 3] = [Algorithm::LoserTree, Algorithm::PaimonLoserTree, Algorithm::Heap];

/// How the byte key is given: one column of each byte type, or a composite key (the
/// bytes, then the integer they stand for) that goes through arrow's row format.
#[derive(Debug, Clone, Copy)]
enum Form {
    Single(&'static DataType),
    Composite,
}

const FORMS: [Form; 4] = [
    Form::Single(&DataType::Binary),
    Form::Single(&DataType::LargeBinary),
    Form::Single(&DataType::BinaryView),
    Form::Composite,
];

/// Distinct byte keys in ascending order (key `k` of a run is `table[k]`): a head of up to
/// 150 bytes, kept whole or cut anywhere, then a tail over a few bytes below and above
/// the head's, from empty to past two chunks of a code.
fn table() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let byte = prop::sample::select(vec![0u8, 1, 2, b'h', 255]);
    let tail = prop::collection::vec(byte, 0..14);
    let cut = prop_oneof![3 => Just(usize::MAX), 1 => any::<usize>()];
    let head = (0..150usize, prop::sample::select(vec![0u8, b'h']));
    (head, prop::collection::vec((cut, tail), 1..40)).prop_map(|((length, byte), keys)| {
        let head = vec![byte; length];
        let keys: BTreeSet<Vec<u8>> =
            keys.into_iter().map(|(cut, tail)| [&head[..cut.min(length)], &tail[..]].concat()).collect();
        keys.into_iter().collect()
    })
}

/// Sorted runs (up to `max_runs`, each of up to 40 rows, empty ones too) of keys below `keys`.
fn runs(max_runs: usize, keys: usize, duplicates: bool) -> impl Strategy<Value = Vec<Vec<Row>>> {
    let row = (0..keys as i64, 0..4i64).prop_map(|(key, seq)| Row { key, value: 0, seq, kind: 0 });
    prop::collection::vec(prop::collection::vec(row, 0..40), 1..=max_runs).prop_map(move |runs| {
        let mut value = 0;
        let mut sorted = |mut rows: Vec<Row>| {
            rows.sort_by_key(|r| r.key);
            if !duplicates {
                rows.dedup_by_key(|r| r.key);
            }
            for r in &mut rows {
                (r.value, value) = (value, value + 1);
            }
            rows
        };
        runs.into_iter().map(&mut sorted).collect()
    })
}

/// A table and runs over its keys.
fn table_and_runs(max_runs: usize, duplicates: bool) -> impl Strategy<Value = (Vec<Vec<u8>>, Vec<Vec<Row>>)> {
    table().prop_flat_map(move |table| {
        let keys = table.len();
        (Just(table), runs(max_runs, keys, duplicates))
    })
}

/// `rows` as a run whose key column `k` holds `table[key]` in `form` (a composite key adds
/// `k2`, the integer key, at the end), cut into batches at `cuts`.
fn byte_run(rows: &[Row], cuts: &[usize], table: &Arc<Vec<Vec<u8>>>, form: Form) -> crate::Run {
    let crate::Run { schema, batches } = run(rows, cuts);
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let key_type = match form {
        Form::Single(t) => t.clone(),
        Form::Composite => DataType::Binary,
    };
    fields[0] = Field::new("k", key_type.clone(), false);
    if let Form::Composite = form {
        fields.push(Field::new("k2", DataType::Int64, false));
    }
    let schema = Arc::new(Schema::new(fields));
    let (batch_schema, table) = (schema.clone(), table.clone());
    let batches = batches.map(move |b| {
        let b = b?;
        let keys = b.column(0).as_primitive::<Int64Type>();
        let bytes: ArrayRef =
            Arc::new(BinaryArray::from_iter_values(keys.values().iter().map(|&k| &table[k as usize])));
        let mut columns = b.columns().to_vec();
        columns[0] = arrow_cast::cast(&bytes, &key_type)?;
        if let Form::Composite = form {
            columns.push(b.column(0).clone());
        }
        RecordBatch::try_new(batch_schema.clone(), columns)
    });
    crate::Run { schema, batches: Box::new(batches) }
}

/// The merged rows as (key, value, kind), each byte key turned back into its integer.
fn merged(
    runs: &[Vec<Row>],
    cuts: &[usize],
    table: &Arc<Vec<Vec<u8>>>,
    form: Form,
    options: MergeOptions,
) -> Vec<(i64, i64, u8)> {
    let inputs = runs.iter().map(|rows| byte_run(rows, cuts, table, form)).collect();
    let batches: Vec<RecordBatch> = merge(inputs, options).unwrap().collect::<Result<_, _>>().unwrap();
    let as_integers = |b: &RecordBatch| {
        let bytes = arrow_cast::cast(b.column(0), &DataType::Binary).unwrap();
        let keys =
            bytes.as_binary::<i32>().iter().map(|k| table.binary_search(&k.unwrap().to_vec()).unwrap());
        let mut columns = b.columns().to_vec();
        columns[0] = Arc::new(Int64Array::from_iter_values(keys.map(|k| k as i64)));
        RecordBatch::try_from_iter(b.schema().fields().iter().map(|f| f.name().clone()).zip(columns)).unwrap()
    };
    rows_of(&batches.iter().map(as_integers).collect::<Vec<_>>())
}

fn options(merge: MergeFunction, algorithm: Algorithm, order: Order, form: Form) -> MergeOptions {
    let key: &[&str] = match form {
        Form::Single(_) => &["k"],
        Form::Composite => &["k", "k2"],
    };
    let mut o = MergeOptions::new(key);
    o.merge = merge;
    o.algorithm = algorithm;
    o.batch_size = 16;
    if order == Order::Sequence {
        o.versions.sequence = vec!["seq".into()];
    }
    o
}

/// Every engine in every key form merges as the reference does.
fn check(
    table: Vec<Vec<u8>>,
    runs: &[Vec<Row>],
    cuts: &[usize],
    order: Order,
    functions: &[MergeFunction],
) -> Result<(), TestCaseError> {
    let table = Arc::new(table);
    for function in functions {
        let want = expected(runs, order, function).expect("adds only");
        for form in FORMS {
            for algorithm in ALGORITHMS {
                let got = merged(runs, cuts, &table, form, options(function.clone(), algorithm, order, form));
                prop_assert_eq!(&got, &want, "{:?} {:?} {:?}", algorithm, form, function);
            }
        }
    }
    Ok(())
}

const ORDERS: [Order; 2] = [Order::Arrival, Order::Sequence];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Groups (one output row per key) and versions (the newest wins) as the reference's.
    #[test]
    fn engines_fold_byte_keys_as_the_reference(
        (table, runs) in table_and_runs(9, false),
        cuts in prop::collection::vec(0usize..50, 0..4),
        order in prop::sample::select(ORDERS.to_vec()),
    ) {
        check(table, &runs, &cuts, order, &[MergeFunction::default(), MergeFunction::partial_update()])?;
    }

    /// Every row in (key, version) order, with equal keys inside runs too.
    #[test]
    fn engines_order_byte_keys_as_the_reference(
        (table, runs) in table_and_runs(9, true),
        cuts in prop::collection::vec(0usize..50, 0..4),
        order in prop::sample::select(ORDERS.to_vec()),
    ) {
        check(table, &runs, &cuts, order, &[MergeFunction::None])?;
    }

    #[test]
    fn hundreds_of_runs_of_byte_keys(
        (table, runs) in table_and_runs(300, false),
        order in prop::sample::select(ORDERS.to_vec()),
    ) {
        check(table, &runs, &[], order, &[MergeFunction::default()])?;
    }
}

#[test]
fn all_byte_keys_equal_in_hundreds_of_runs() {
    let table = vec![[vec![b'h'; 100], vec![0]].concat()];
    let runs: Vec<Vec<Row>> = (0..257)
        .map(|r| vec![Row { key: 0, value: r, seq: (r * 7919) % 13, kind: 0 }; 1 + r as usize % 3])
        .collect();
    for order in ORDERS {
        check(table.clone(), &runs, &[1], order, &[MergeFunction::None]).unwrap();
    }
}
