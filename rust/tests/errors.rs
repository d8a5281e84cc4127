//! Bad input gets an error naming run, row and column; never a panic or short output.

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

use super::reference::{run, Row};
use crate::{merge, MergeError, MergeFunction, MergeOptions, Run};

fn rows(keys: &[i64]) -> Vec<Row> {
    keys.iter().map(|&key| Row { key, value: 0, seq: 0, kind: 0 }).collect()
}

fn error_of(runs: Vec<Run>, options: MergeOptions) -> String {
    let result = merge(runs, options).and_then(|s| s.collect::<Result<Vec<_>, _>>());
    match result {
        Err(MergeError::InvalidInput(msg)) => msg,
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn unsorted_run_names_run_and_row() {
    let msg =
        error_of(vec![run(&rows(&[1, 2]), &[]), run(&rows(&[1, 5, 3]), &[])], MergeOptions::new(&["k"]));
    assert!(msg.contains("run 1, row 2") && msg.contains("not sorted") && msg.contains("'k'"), "{msg}");
}

#[test]
fn unsorted_across_a_batch_boundary() {
    let msg = error_of(vec![run(&rows(&[1, 5, 3, 4]), &[2])], MergeOptions::new(&["k"]));
    assert!(msg.contains("run 0, row 2"), "{msg}");
}

#[test]
fn duplicate_key_is_an_error_only_when_folding() {
    let msg = error_of(vec![run(&rows(&[1, 2, 2]), &[])], MergeOptions::new(&["k"]));
    assert!(msg.contains("run 0, row 2") && msg.contains("duplicate key"), "{msg}");
    let mut options = MergeOptions::new(&["k"]);
    options.merge = MergeFunction::None;
    let out: Vec<_> =
        merge(vec![run(&rows(&[1, 2, 2]), &[])], options).unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(out.iter().map(|b| b.num_rows()).sum::<usize>(), 3);
}

#[test]
fn null_key_names_the_column() {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    let batch =
        RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![Some(1), None]))]).unwrap();
    let msg = error_of(vec![Run::from_batches(schema, vec![batch])], MergeOptions::new(&["id"]));
    assert!(msg.contains("run 0, row 1") && msg.contains("null in key column 'id'"), "{msg}");
}

#[test]
fn unknown_columns_and_schema_mismatch() {
    let msg = error_of(vec![run(&rows(&[1]), &[])], MergeOptions::new(&["nope"]));
    assert!(msg.contains("unknown key column 'nope'"), "{msg}");
    let other = Arc::new(Schema::new(vec![Field::new("k", DataType::Utf8, false)]));
    let batch = RecordBatch::try_new(other.clone(), vec![Arc::new(StringArray::from(vec!["a"]))]).unwrap();
    let msg = error_of(
        vec![run(&rows(&[1]), &[]), Run::from_batches(other, vec![batch])],
        MergeOptions::new(&["k"]),
    );
    assert!(msg.contains("schema mismatch") && msg.contains("run 1"), "{msg}");
}

#[test]
fn bad_row_kind_names_the_row() {
    let mut r = rows(&[1, 2]);
    r[1].kind = 3;
    let schema = super::reference::schema();
    let mut batch = super::reference::batch(&r);
    let mut cols = batch.columns().to_vec();
    cols[3] = Arc::new(StringArray::from(vec!["+I", "?X"]));
    batch = RecordBatch::try_new(schema.clone(), cols).unwrap();
    let mut options = MergeOptions::new(&["k"]);
    options.versions.row_kind = Some("kind".into());
    let msg = error_of(vec![Run::from_batches(schema, vec![batch])], options);
    assert!(msg.contains("run 0, row 1") && msg.contains("'?X'"), "{msg}");
}

#[test]
fn an_input_error_mid_stream_ends_the_stream() {
    let schema = super::reference::schema();
    let good = super::reference::batch(&rows(&[1, 2]));
    let failing: crate::BatchIter = Box::new(
        vec![
            Ok(good),
            Err(arrow_schema::ArrowError::IoError("disk gone".into(), std::io::Error::other("x"))),
        ]
        .into_iter(),
    );
    let mut options = MergeOptions::new(&["k"]);
    options.batch_size = 1;
    let mut stream = merge(vec![Run { schema, batches: failing }], options).unwrap();
    let results: Vec<_> = stream.by_ref().collect();
    assert!(results.iter().any(|r| r.is_err()));
    assert!(stream.next().is_none());
}

/// A run whose second batch has another type is refused before any of its rows is used
/// (the engines read key buffers by the run's type).
#[test]
fn a_batch_of_another_type_is_refused() {
    let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
    let other = Arc::new(Schema::new(vec![Field::new("k", DataType::Float64, false)]));
    let first = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![1, 2]))]).unwrap();
    let second =
        RecordBatch::try_new(other, vec![Arc::new(arrow_array::Float64Array::from(vec![3.0, 4.0]))]).unwrap();
    let batches: crate::BatchIter = Box::new(vec![Ok(first), Ok(second)].into_iter());
    let msg = error_of(vec![Run { schema, batches }], MergeOptions::new(&["k"]));
    assert!(msg.contains("run 0, batch 1") && msg.contains("Float64"), "{msg}");
}

#[test]
fn a_null_in_a_column_declared_not_nullable_is_refused() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, false),
    ]));
    let nullable = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ]));
    let batch = RecordBatch::try_new(
        nullable,
        vec![Arc::new(Int64Array::from(vec![1, 2])), Arc::new(Int64Array::from(vec![Some(1), None]))],
    )
    .unwrap();
    let batches: crate::BatchIter = Box::new(vec![Ok(batch)].into_iter());
    let msg = error_of(vec![Run { schema, batches }], MergeOptions::new(&["k"]));
    assert!(msg.contains("run 0, batch 0") && msg.contains("null in column 'v'"), "{msg}");
}

/// Offsets past the values buffer, or going backwards (arrays no arrow constructor would
/// build, but a C stream can deliver), are an input error, not a read out of bounds.
#[test]
fn malformed_string_offsets_are_refused() {
    use arrow_buffer::{Buffer, ScalarBuffer};
    let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Utf8, false)]));
    for bad in [vec![0, 1, 64], vec![0, 2, 1], vec![-1, 0, 1]] {
        let offsets = ScalarBuffer::<i32>::from(bad.clone()).into_inner();
        let data = arrow_data::ArrayData::builder(DataType::Utf8)
            .len(2)
            .add_buffer(offsets)
            .add_buffer(Buffer::from(b"ab".as_slice()));
        // SAFETY: deliberately malformed, as a foreign producer could send it; merge-core
        // must check before slicing.
        let data = unsafe { data.build_unchecked() };
        let batch = RecordBatch::try_new(schema.clone(), vec![arrow_array::make_array(data)]).unwrap();
        let msg = error_of(vec![Run::from_batches(schema.clone(), vec![batch])], MergeOptions::new(&["k"]));
        assert!(msg.contains("offsets point outside"), "{bad:?}: {msg}");
    }
}
