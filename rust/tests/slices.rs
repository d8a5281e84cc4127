//! Key-range slices merged one after another equal the whole merge, for any cut.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use proptest::prelude::*;

use crate::read::files::{parquet_file, run_of_files, DataFile, Side};
use crate::read::slices::{part_rows, slice_counts, slice_files, slice_runs_of_at_least};
use crate::{merge, MergeOptions, Run};

/// Parquet files written for a test, removed when it ends (passing or not).
pub(super) struct Files {
    pub(super) dir: PathBuf,
}

impl Files {
    pub(super) fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("merge-core-slices-{}-{}", std::process::id(), NEXT.fetch_add(1, Relaxed));
        let dir = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        Self { dir }
    }

    /// A file of `keys` (sorted) and a value column numbering the rows from `first_value`,
    /// in pages of `page_rows` rows and row groups of `group_rows`.
    fn write(
        &self,
        keys: ArrayRef,
        first_value: i64,
        page_rows: usize,
        group_rows: usize,
        stats: EnabledStatistics,
    ) -> DataFile {
        let values: ArrayRef =
            Arc::new(Int64Array::from_iter_values(first_value..first_value + keys.len() as i64));
        let batch = RecordBatch::try_from_iter([("k", keys), ("v", values)]).unwrap();
        let path = self.dir.join(format!("{}.parquet", std::fs::read_dir(&self.dir).unwrap().count()));
        let properties = WriterProperties::builder()
            .set_data_page_row_count_limit(page_rows)
            .set_write_batch_size(page_rows)
            .set_max_row_group_row_count(Some(group_rows))
            .set_statistics_enabled(stats)
            .build();
        let mut writer =
            ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), Some(properties))
                .unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        parquet_file(path).unwrap()
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn schema_of(file: &DataFile) -> SchemaRef {
    file.metadata.as_ref().unwrap().schema().clone()
}

/// The (key, value) rows a merge of `runs` outputs, keys shown as strings.
fn merged(runs: Vec<Run>) -> Vec<(String, i64)> {
    let out = merge(runs, MergeOptions::new(&["k"])).unwrap();
    let mut rows = Vec::new();
    for batch in out {
        let batch = batch.unwrap();
        let keys =
            arrow_cast::display::ArrayFormatter::try_new(batch.column(0).as_ref(), &Default::default())
                .unwrap();
        let values = batch.column(1).as_primitive::<Int64Type>();
        rows.extend((0..batch.num_rows()).map(|i| (keys.value(i).to_string(), values.value(i))));
    }
    rows
}

/// Merges `runs` whole and cut into `slices`: the same rows, whether the slices are
/// merged one after another, last first (so each decodes the zones it shares with the
/// next one, or with the one before), or all at once; returns how many slices.
fn check_slices(runs: Vec<Vec<DataFile>>, slices: usize) -> usize {
    let schema = schema_of(&runs[0][0]);
    let whole = runs.iter().map(|files| run_of_files(schema.clone(), files.clone(), 7)).collect();
    let expected = merged(whole);
    let cut = || slice_runs_of_at_least(&schema, runs.clone(), 0, slices, 7, 1);
    let groups = cut();
    let count = groups.len();
    assert!(count <= slices);
    let in_order: Vec<_> = groups.into_iter().flat_map(merged).collect();
    assert_eq!(in_order, expected);
    let mut last_first: Vec<_> = cut().into_iter().rev().map(merged).collect();
    last_first.reverse();
    assert_eq!(last_first.concat(), expected);
    let at_once: Vec<Vec<_>> = std::thread::scope(|scope| {
        let workers: Vec<_> = cut().into_iter().map(|group| scope.spawn(move || merged(group))).collect();
        workers.into_iter().map(|worker| worker.join().unwrap()).collect()
    });
    assert_eq!(at_once.concat(), expected);
    count
}

/// How many slices `runs` are cut into, and the rows they decode (zones two slices
/// share counted once).
fn slices_and_decoded_rows(runs: Vec<Vec<DataFile>>, slices: usize) -> (usize, u64) {
    let schema = schema_of(&runs[0][0]);
    let parts = slice_files(&schema, runs, 0, slices, 1);
    let decoded = parts.iter().flatten().flatten();
    let decoded = decoded.filter(|part| !matches!(part.shared, Some((_, Side::Below)))).map(part_rows).sum();
    (parts.len(), decoded)
}

fn int_keys(keys: &[i64]) -> ArrayRef {
    Arc::new(Int64Array::from(keys.to_vec()))
}

/// Ten runs whose keys interleave, in pages of 100 rows that start at different keys:
/// every cut falls inside a page of most runs, and the slices still hold about as many
/// rows each (a page a cut falls in counts half below it, half above).
#[test]
fn cuts_inside_pages_share_rows_evenly() {
    let files = Files::new();
    let runs: Vec<Vec<DataFile>> = (0..10)
        .map(|run| {
            let keys: Vec<i64> = (run * 10..1000 + run * 10).map(|i| i * 10 + run).collect();
            vec![files.write(int_keys(&keys), run * 1000, 100, 1000, EnabledStatistics::Page)]
        })
        .collect();
    let schema = schema_of(&runs[0][0]);
    let groups = slice_runs_of_at_least(&schema, runs, 0, 5, 100, 1);
    let rows: Vec<usize> = groups.into_iter().map(|g| merged(g).len()).collect();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows.iter().sum::<usize>(), 10_000);
    assert!(rows.iter().all(|&r| r.abs_diff(2000) <= 200), "uneven slices: {rows:?}");
}

/// Nine tenths of the rows share one key: the first cut already covers the second
/// slice's share, and the read is cut in two, not into three with a near-empty middle.
#[test]
fn a_share_the_cut_before_covers_makes_no_slice() {
    let files = Files::new();
    let keys: Vec<i64> = std::iter::repeat_n(5, 900).chain(6..106).collect();
    let runs = vec![vec![files.write(int_keys(&keys), 0, 10, 1000, EnabledStatistics::Page)]];
    let schema = schema_of(&runs[0][0]);
    let rows: Vec<usize> = (slice_runs_of_at_least(&schema, runs, 0, 3, 100, 1).into_iter())
        .map(|group| {
            group.into_iter().map(|run| run.batches.map(|b| b.unwrap().num_rows()).sum::<usize>()).sum()
        })
        .collect();
    assert_eq!(rows, vec![900, 100]);
}

#[test]
fn overlapping_runs_are_cut_evenly() {
    let files = Files::new();
    let a: Vec<i64> = (0..1000).map(|i| i * 3).collect();
    let b: Vec<i64> = (0..1000).map(|i| i * 2).collect();
    let runs = vec![
        vec![files.write(int_keys(&a), 0, 50, 400, EnabledStatistics::Page)],
        vec![files.write(int_keys(&b), 10_000, 30, 1000, EnabledStatistics::Page)],
    ];
    let schema = schema_of(&runs[0][0]);
    let groups = slice_runs_of_at_least(&schema, runs.clone(), 0, 4, 100, 1);
    let rows: Vec<usize> = groups.into_iter().map(|g| merged(g).len()).collect();
    assert_eq!(rows.len(), 4);
    let total: usize = rows.iter().sum();
    assert!(rows.iter().all(|&r| r * 4 > total / 2 && r * 4 < total * 2), "uneven slices: {rows:?}");
    assert_eq!(check_slices(runs, 4), 4);
}

#[test]
fn row_group_statistics_cut_when_there_is_no_page_index() {
    let files = Files::new();
    let keys: Vec<i64> = (0..1200).collect();
    let runs = vec![
        vec![files.write(int_keys(&keys), 0, 1200, 40, EnabledStatistics::Chunk)],
        vec![files.write(int_keys(&keys), 10_000, 1200, 30, EnabledStatistics::Chunk)],
    ];
    let index = runs[0][0].metadata.as_ref().unwrap().metadata().page_index();
    assert!(index.is_none_or(|index| index.column_index(0, 0).is_none()));
    assert_eq!(check_slices(runs, 3), 3);
}

#[test]
fn slices_come_in_whole_rounds_of_threads() {
    // 4.25 shares of output on 2 threads: 2 rounds, then 1; never 5 (the fifth would
    // merge alone while the other thread idles).
    assert_eq!(slice_counts(425, 100, 2, 1000), vec![4, 2]);
    assert_eq!(slice_counts(560, 100, 2, 1000), vec![6, 4, 2]);
    // Too few rows for a round: fewer slices than threads.
    assert_eq!(slice_counts(10_000, 100, 8, 5), vec![5, 4, 3, 2]);
    assert_eq!(slice_counts(0, 100, 3, 1000), vec![3, 2]);
    assert_eq!(slice_counts(0, 100, 2, 1), Vec::<usize>::new());
}

#[test]
fn zones_a_cut_falls_in_are_decoded_once() {
    // Row groups of 40 rows and no page index: every cut falls inside a row group of
    // each run, which the slices on its two sides share.
    let files = Files::new();
    let runs = interleaved_runs(&files, 3, 1200, 40);
    assert_eq!(slices_and_decoded_rows(runs.clone(), 4), (4, 3600));
    assert_eq!(check_slices(runs, 4), 4);
}

#[test]
fn the_range_below_a_cut_decodes_its_shared_zones_as_it_starts() {
    // The range above may start any time and needs its rows of them at once: the range
    // below decodes them first, not at its end.
    let files = Files::new();
    let runs = runs_of_uneven_row_groups(&files);
    let schema = schema_of(&runs[0][0]);
    let mut parts = slice_files(&schema, runs, 0, 2, 1);
    assert_eq!(parts.len(), 2);
    let below = parts.remove(0);
    let upper_zones: Vec<_> = (below.iter().flatten())
        .filter_map(|part| match &part.shared {
            Some((zones, Side::Below)) => Some(zones.clone()),
            _ => None,
        })
        .collect();
    assert!(!upper_zones.is_empty(), "no cut falls inside a row group");
    for run_parts in below {
        let mut run = run_of_files(schema.clone(), run_parts, 7);
        assert!(run.batches.next().unwrap().is_ok());
    }
    assert!(upper_zones.iter().all(|zones| zones.is_set_aside()), "left for the range's end");
}

#[test]
fn a_range_that_fails_on_shared_zones_leaves_them_to_the_other() {
    let files = Files::new();
    let runs = runs_of_uneven_row_groups(&files);
    let schema = schema_of(&runs[0][0]);
    let expected = merged(runs.iter().map(|files| run_of_files(schema.clone(), files.clone(), 7)).collect());
    let mut parts = slice_files(&schema, runs, 0, 2, 1);
    assert_eq!(parts.len(), 2);
    // The range above reads the files whose zones it shares from damaged copies (their
    // footers are known, their pages are gone): it fails while decoding those zones.
    let shared = parts[1].iter_mut().flatten().filter(|part| part.shared.is_some());
    let mut damaged = 0;
    for part in shared {
        let copy = part.path.with_extension("damaged");
        std::fs::write(&copy, &std::fs::read(&part.path).unwrap()[..100]).unwrap();
        part.path = copy;
        damaged += 1;
    }
    assert!(damaged > 0, "no cut falls inside a row group");
    let runs_of = |runs: Vec<Vec<DataFile>>| -> Vec<Run> {
        runs.into_iter().map(|files| run_of_files(schema.clone(), files, 7)).collect()
    };
    let below = runs_of(parts.remove(0));
    let failed =
        merge(runs_of(parts.remove(0)), MergeOptions::new(&["k"])).unwrap().any(|batch| batch.is_err());
    assert!(failed, "the damaged files read");
    // The range below now decodes the shared zones itself (on a thread: if it waited
    // for the failed range, it would wait forever).
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(merged(below)));
    let got =
        receiver.recv_timeout(std::time::Duration::from_secs(60)).expect("the range below waits forever");
    assert!(!got.is_empty() && got.len() < expected.len());
    assert_eq!(got, expected[..got.len()]);
}

#[test]
fn zones_too_coarse_to_cut_merge_whole() {
    // One row group a file, no page index: every cut would decode nearly every file twice.
    let files = Files::new();
    let runs = interleaved_runs(&files, 4, 1000, 1000);
    assert_eq!(check_slices(runs, 2), 1);
}

/// Three runs of interleaved keys in row groups of a different size in each run (no page
/// index), so that a cut falls inside some.
fn runs_of_uneven_row_groups(files: &Files) -> Vec<Vec<DataFile>> {
    let run = |i: i64| {
        let keys: Vec<i64> = (0..1200).map(|k| k * 3 + i).collect();
        let group_rows = 40 + 7 * i as usize;
        vec![files.write(int_keys(&keys), i * 10_000, 1200, group_rows, EnabledStatistics::Chunk)]
    };
    (0..3).map(run).collect()
}

/// `runs` runs of a file each, `rows` keys interleaved across them (run `i` holds
/// `i, i + runs, ...`), in row groups of `group_rows` with no page index.
fn interleaved_runs(files: &Files, runs: i64, rows: i64, group_rows: usize) -> Vec<Vec<DataFile>> {
    let run = |i: i64| {
        let keys: Vec<i64> = (0..rows).map(|k| k * runs + i).collect();
        let page_rows = rows as usize;
        vec![files.write(int_keys(&keys), i * 10_000, page_rows, group_rows, EnabledStatistics::Chunk)]
    };
    (0..runs).map(run).collect()
}

#[test]
fn what_cannot_be_cut_merges_whole() {
    let files = Files::new();
    let keys: Vec<i64> = (0..600).collect();
    // No statistics at all.
    let plain = vec![vec![files.write(int_keys(&keys), 0, 50, 600, EnabledStatistics::None)]];
    assert_eq!(check_slices(plain, 3), 1);
    // Every key equal: no cut leaves rows on both sides.
    let same =
        (0..4).map(|i| vec![files.write(int_keys(&[7]), i * 10, 1, 1, EnabledStatistics::Page)]).collect();
    assert_eq!(check_slices(same, 3), 1);
    // A key column with a null: the merge must see it (and refuses it), so no cut.
    let nulls: ArrayRef = Arc::new(Int64Array::from(vec![None, Some(1), Some(2), Some(3)]));
    let file = files.write(nulls, 0, 1, 4, EnabledStatistics::Page);
    let schema = schema_of(&file);
    assert_eq!(slice_runs_of_at_least(&schema, vec![vec![file]], 0, 3, 7, 1).len(), 1);
    // A float key: its statistics need not order as the merge orders keys.
    let floats: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![1.0, 2.0, 3.0, 4.0]));
    let file = files.write(floats, 0, 1, 4, EnabledStatistics::Page);
    let schema = schema_of(&file);
    assert_eq!(slice_runs_of_at_least(&schema, vec![vec![file]], 0, 3, 7, 1).len(), 1);
}

#[test]
fn slices_keep_the_deletion_vectors() {
    let files = Files::new();
    let keys: Vec<i64> = (0..500).collect();
    let mut newer = files.write(int_keys(&keys), 1000, 20, 500, EnabledStatistics::Page);
    newer.deleted = (0..500).filter(|i| i % 7 == 0 || (240..260).contains(i)).collect();
    let older = files.write(int_keys(&keys), 0, 33, 500, EnabledStatistics::Page);
    assert_eq!(check_slices(vec![vec![older], vec![newer]], 4), 4);
}

#[test]
fn the_schema_column_of_a_renamed_key_is_cut_by_the_file_name() {
    let files = Files::new();
    let keys: Vec<i64> = (0..300).collect();
    let file = files.write(int_keys(&keys), 0, 10, 300, EnabledStatistics::Page);
    // The read calls the key "id"; the file calls it "k".
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ]));
    let renamed = DataFile { columns: vec![Some("k".into()), Some("v".into())], ..file };
    let groups = slice_runs_of_at_least(&schema, vec![vec![renamed]], 0, 3, 7, 1);
    assert_eq!(groups.len(), 3);
    let opts = MergeOptions::new(&["id"]);
    let rows: usize = groups
        .into_iter()
        .map(|g| merge(g, opts.clone()).unwrap().map(|b| b.unwrap().num_rows()).sum::<usize>())
        .sum();
    assert_eq!(rows, 300);
}

/// Sorted distinct keys, one list per run.
fn runs_of_keys() -> impl Strategy<Value = Vec<Vec<i64>>> {
    (1i64..400).prop_flat_map(|range| {
        prop::collection::vec(prop::collection::btree_set(0..range, 0..200), 1..6)
            .prop_map(|runs| runs.into_iter().map(|keys| keys.into_iter().collect()).collect())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn sliced_merges_equal_the_whole_merge(
        runs in runs_of_keys(),
        page_rows in 1usize..10,
        group_rows in 1usize..300,
        slices in 2usize..6,
        strings in any::<bool>(),
        deleted_every in 0u64..5,
    ) {
        let files = Files::new();
        let mut value = 0;
        let runs: Vec<Vec<DataFile>> = runs
            .iter()
            .filter(|keys| !keys.is_empty())
            .map(|keys| {
                let column: ArrayRef = match strings {
                    // A long shared prefix, as in the bench's string keys.
                    true => Arc::new(StringArray::from_iter_values(keys.iter().map(|k| format!("{}{k:05}", "p".repeat(70))))),
                    false => int_keys(keys),
                };
                let mut file = files.write(column, value, page_rows, group_rows, EnabledStatistics::Page);
                if deleted_every > 0 {
                    file.deleted = (0..keys.len() as u64).filter(|i| i % (deleted_every + 1) == 1).collect();
                }
                value += 1000;
                vec![file]
            })
            .collect();
        prop_assume!(!runs.is_empty());
        check_slices(runs, slices);
    }
}

#[test]
fn a_tables_file_breaking_the_contract_is_damaged_and_named() {
    let files = Files::new();
    let file = files.write(Arc::new(Int64Array::from(vec![1, 3, 2])), 0, 8, 8, EnabledStatistics::Page);
    let path = file.path.display().to_string();
    let error = |of_table: bool| {
        let file = DataFile { of_table, ..file.clone() };
        let run = run_of_files(schema_of(&file), vec![file], 8);
        let out = merge(vec![run], MergeOptions::new(&["k"])).and_then(|s| s.collect::<Result<Vec<_>, _>>());
        out.expect_err("the keys are not sorted")
    };
    match error(false) {
        // A caller's file: the caller names it by its run.
        crate::MergeError::InvalidInput(msg) => {
            assert!(msg.starts_with("run 0, row 2: run is not sorted"), "{msg}")
        }
        other => panic!("expected an input error, got {other:?}"),
    }
    match error(true) {
        crate::MergeError::CorruptTable(msg) => {
            assert!(msg.starts_with(&format!("data file {path}: run 0, row 2: run is not sorted")), "{msg}")
        }
        other => panic!("expected a damaged table, got {other:?}"),
    }
}
