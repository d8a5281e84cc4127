//! A table read through its one entry point, [`read_sections`], from data files laid out
//! as Paimon's writers lay them out (written here with the parquet crate).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, Int8Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;

use super::slices::Files;
use crate::read::system_columns::{KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND};
use crate::read::{read_sections, DataFile, ReadOptions};
use crate::RowKind;

/// A version of a row of a table keyed by `id` with one value column `v`.
type Version = (i64, i64, RowKind, Option<&'static str>);

/// A data file of `versions` (sorted by key): the key's copy, the sequence number, the
/// row kind, then the table's columns.
fn data_file(files: &Files, versions: &[Version]) -> DataFile {
    let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(versions.iter().map(|v| v.0)));
    let sequence = Int64Array::from_iter_values(versions.iter().map(|v| v.1));
    let kinds = Int8Array::from_iter_values(versions.iter().map(|v| v.2 as i8));
    let values = StringArray::from_iter(versions.iter().map(|v| v.3));
    let batch = RecordBatch::try_from_iter([
        (format!("{KEY_PREFIX}id"), ids.clone()),
        (SEQUENCE_NUMBER.to_string(), Arc::new(sequence) as ArrayRef),
        (VALUE_KIND.to_string(), Arc::new(kinds) as ArrayRef),
        ("id".to_string(), ids),
        ("v".to_string(), Arc::new(values) as ArrayRef),
    ])
    .unwrap();
    let path = files.dir.join(format!("{}.parquet", std::fs::read_dir(&files.dir).unwrap().count()));
    let mut writer =
        ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let columns = ["id", "v", SEQUENCE_NUMBER, VALUE_KIND].map(|c| Some(c.to_string())).to_vec();
    DataFile { path, columns, ..DataFile::default() }
}

#[test]
fn a_table_reads_through_its_entry_point() {
    use RowKind::*;
    let files = Files::new();
    let mut older =
        data_file(&files, &[(1, 1, Insert, Some("a")), (2, 2, Insert, Some("b")), (3, 3, Insert, Some("c"))]);
    older.deleted = vec![0]; // its deletion vector drops key 1
    let newer = data_file(
        &files,
        &[(2, 4, UpdateAfter, Some("B")), (3, 5, Delete, Some("c")), (4, 6, Insert, Some("d"))],
    );
    let other_bucket = data_file(&files, &[(10, 1, Insert, Some("x")), (11, 2, Insert, None)]);
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Utf8, true),
        Field::new(SEQUENCE_NUMBER, DataType::Int64, false),
        Field::new(VALUE_KIND, DataType::Int8, false),
    ]));
    for threads in [1, 3] {
        // The newer run comes first: the sequence numbers, not the runs' order, say which
        // version is newest.
        let sections = vec![vec![vec![newer.clone()], vec![older.clone()]], vec![vec![other_bucket.clone()]]];
        let options = ReadOptions {
            columns: Some(vec!["id".into(), "v".into()]),
            threads,
            ..ReadOptions::new(&["id"])
        };
        let stream = read_sections(schema.clone(), sections, options).unwrap();
        let names: Vec<_> = stream.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["id", "v"]);
        let (mut ids, mut values) = (Vec::new(), Vec::new());
        for batch in stream {
            let batch = batch.unwrap();
            ids.extend(batch.column(0).as_primitive::<Int64Type>().values().iter().copied());
            values.extend(batch.column(1).as_string::<i32>().iter().map(|v| v.map(str::to_owned)));
        }
        assert_eq!(ids, [2, 4, 10, 11], "on {threads} threads");
        assert_eq!(
            values,
            [Some("B".into()), Some("d".into()), Some("x".into()), None],
            "on {threads} threads"
        );
    }
}
