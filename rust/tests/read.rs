//! A table read through its one entry point, [`read_sections`], from data files laid out
//! as Paimon's writers lay them out (written here with the parquet crate).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, Int8Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;

use super::slices::Files;
use crate::read::counters::ReadStats;
use crate::read::lookup_cache::LookupCache;
use crate::read::system_columns::{KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND};
use crate::read::{read_sections, DataFile, KeyBounds, ReadOptions};
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

/// A file of rows `(a, b, sequence number)` of a table keyed by `(a, b)` (sorted), in
/// pages of 3 rows, with its page index.
fn paged_file(files: &Files, rows: &[(i64, i64, i64)]) -> DataFile {
    let path = files.dir.join(format!("{}.parquet", std::fs::read_dir(&files.dir).unwrap().count()));
    write_paged(&path, rows);
    let columns = ["a", "b", SEQUENCE_NUMBER, VALUE_KIND].map(|c| Some(c.to_string())).to_vec();
    DataFile { path, columns, ..DataFile::default() }
}

/// Writes the file of [`paged_file`] at `path`.
fn write_paged(path: &std::path::Path, rows: &[(i64, i64, i64)]) {
    let column = |f: fn(&(i64, i64, i64)) -> i64| Arc::new(Int64Array::from_iter_values(rows.iter().map(f)));
    let batch = RecordBatch::try_from_iter([
        ("a", column(|r| r.0) as ArrayRef),
        ("b", column(|r| r.1) as ArrayRef),
        (SEQUENCE_NUMBER, column(|r| r.2) as ArrayRef),
        (VALUE_KIND, Arc::new(Int8Array::from(vec![RowKind::Insert as i8; rows.len()])) as ArrayRef),
    ])
    .unwrap();
    let properties = parquet::file::properties::WriterProperties::builder()
        .set_data_page_row_count_limit(3)
        .set_write_batch_size(3)
        .build();
    let mut writer =
        ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), Some(properties)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

/// The `(a, b)` rows a read of `sections` outputs with the first key column in `lower..upper`,
/// and its figures.
fn read_range(
    sections: Vec<Vec<Vec<DataFile>>>,
    lower: i64,
    upper: i64,
    threads: usize,
) -> (Vec<(i64, i64)>, ReadStats) {
    read_range_cached(sections, lower, upper, threads, None)
}

/// [`read_range`] keeping footers and key digests in `cache`.
fn read_range_cached(
    sections: Vec<Vec<Vec<DataFile>>>,
    lower: i64,
    upper: i64,
    threads: usize,
    cache: Option<Arc<LookupCache>>,
) -> (Vec<(i64, i64)>, ReadStats) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, false),
        Field::new("b", DataType::Int64, false),
        Field::new(SEQUENCE_NUMBER, DataType::Int64, false),
        Field::new(VALUE_KIND, DataType::Int8, false),
    ]));
    let bound = |v: i64| Some(Arc::new(Int64Array::from(vec![v])) as ArrayRef);
    let options = ReadOptions {
        columns: Some(vec!["a".into(), "b".into(), SEQUENCE_NUMBER.into()]),
        threads,
        key_range: Some(KeyBounds { lower: bound(lower), upper: bound(upper) }),
        cache,
        ..ReadOptions::new(&["a", "b"])
    };
    let mut stream = read_sections(schema, sections, options).unwrap();
    let mut rows = Vec::new();
    for batch in stream.by_ref() {
        let batch = batch.unwrap();
        let (a, b) =
            (batch.column(0).as_primitive::<Int64Type>(), batch.column(1).as_primitive::<Int64Type>());
        rows.extend(a.values().iter().copied().zip(b.values().iter().copied()));
    }
    (rows, stream.stats().read.expect("a table's read counts its files"))
}

#[test]
fn a_key_range_reads_the_other_columns_only_of_files_holding_its_keys() {
    let files = Files::new();
    let sections = lookup_files(&files);
    for threads in [1, 2] {
        let (rows, stats) = read_range(sections.clone(), 5, 6, threads);
        assert_eq!(rows, [(5, 0), (5, 1), (5, 2), (5, 3), (5, 4), (5, 9)], "on {threads} threads");
        assert_eq!(stats.files_skipped, 1, "on {threads} threads: {stats:?}");
        assert!(stats.bytes_read > 0);
        // A key in no file: every file the statistics let through is skipped after its key column.
        let (rows, stats) = read_range(sections.clone(), 3, 4, threads);
        assert_eq!(rows, [(3, 1)]);
        assert_eq!(stats.files_skipped, 1, "only `without` holds a 3: {stats:?}");
        let (rows, stats) = read_range(sections.clone(), 6, 7, threads);
        assert_eq!(rows, [(6, 1)]);
        assert_eq!(
            stats.files_skipped, 1,
            "the 6 of `without` is in `crossing`'s last page's range: {stats:?}"
        );
        let (rows, stats) = read_range(sections.clone(), 5, 5, threads);
        assert!(rows.is_empty(), "an empty range: {rows:?}");
        assert!(stats.files_skipped >= 2, "the files that statistics let through are skipped: {stats:?}");
    }
}

/// One merge's files for lookups of the first key column's 5s and others.
fn lookup_files(files: &Files) -> Vec<Vec<Vec<DataFile>>> {
    // The first key column's 5s cross two page boundaries.
    let crossing = paged_file(
        files,
        &[(1, 0, 1), (2, 0, 1), (5, 0, 1), (5, 1, 1), (5, 2, 1), (5, 3, 1), (5, 4, 1), (7, 0, 1)],
    );
    // Its second page's statistics (4..7) may hold 5, but it holds none.
    let without = paged_file(files, &[(1, 1, 2), (2, 1, 2), (3, 1, 2), (4, 1, 2), (6, 1, 2), (7, 1, 2)]);
    // Every key's first column is 5; its row 1 is deleted.
    let mut equal = paged_file(files, &[(5, 2, 3), (5, 3, 3), (5, 9, 3)]);
    equal.deleted = vec![1];
    // No page may hold 5: the file is never opened past its footer.
    let below = paged_file(files, &[(1, 5, 4), (2, 5, 4)]);
    vec![vec![vec![crossing], vec![without], vec![equal], vec![below]]]
}

#[test]
fn a_cached_lookup_answers_as_an_uncached_one_and_reads_less_when_warm() {
    let files = Files::new();
    let sections = lookup_files(&files);
    let cache = Arc::new(LookupCache::new(1 << 20));
    for threads in [1, 2] {
        for (lower, upper) in [(5, 6), (3, 4), (6, 7), (5, 5), (0, 1), (8, 9), (1, 8), (2, 6)] {
            let (want, uncached) = read_range(sections.clone(), lower, upper, threads);
            let cold = read_range_cached(sections.clone(), lower, upper, threads, Some(cache.clone()));
            assert!(cold.1.bytes_read <= uncached.bytes_read, "{lower}..{upper}: {cold:?} vs {uncached:?}");
            // A file's second lookup builds its digests.
            let building = read_range_cached(sections.clone(), lower, upper, threads, Some(cache.clone()));
            let warm = read_range_cached(sections.clone(), lower, upper, threads, Some(cache.clone()));
            assert_eq!(cold.0, want, "{lower}..{upper} on {threads} threads, cold");
            assert_eq!(building.0, want, "{lower}..{upper} on {threads} threads, building");
            assert_eq!(warm.0, want, "{lower}..{upper} on {threads} threads, warm");
            assert!(warm.1.bytes_read <= uncached.bytes_read, "{lower}..{upper}: {warm:?} vs {uncached:?}");
            assert!(warm.1.files_skipped >= uncached.files_skipped, "{warm:?} vs {uncached:?}");
        }
    }
    let (_, uncached) = read_range(sections.clone(), 5, 6, 1);
    let (_, warm) = read_range_cached(sections, 5, 6, 1, Some(cache.clone()));
    assert!(warm.bytes_read < uncached.bytes_read, "no footer read again: {warm:?} vs {uncached:?}");
    let stats = cache.stats();
    assert!(stats.hits > 0 && stats.bytes <= stats.budget, "{stats:?}");
}

#[test]
fn a_file_rewritten_at_its_path_is_read_anew() {
    let files = Files::new();
    let file = paged_file(&files, &[(1, 0, 1), (2, 0, 1), (3, 0, 1), (4, 0, 1), (5, 0, 1)]);
    let cache = Arc::new(LookupCache::new(1 << 20));
    let sections = vec![vec![vec![file.clone()]]];
    for _ in 0..2 {
        let (rows, _) = read_range_cached(sections.clone(), 4, 5, 1, Some(cache.clone()));
        assert_eq!(rows, [(4, 0)]);
    }
    // Other keys at other rows, in another layout, at the same path.
    write_paged(&file.path, &[(0, 7, 2), (0, 8, 2), (2, 7, 2), (4, 7, 2), (4, 8, 2), (4, 9, 2), (9, 7, 2)]);
    let (rows, _) = read_range_cached(sections, 4, 5, 1, Some(cache));
    assert_eq!(rows, [(4, 7), (4, 8), (4, 9)]);
}
