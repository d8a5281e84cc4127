//! The read of a table: the sections a plan chose (each the runs of one merge, each run
//! its Parquet data files in key order) merged on worker threads, their outputs
//! following one another. [`read_sections`] is the whole read, composed in one place:
//!
//! - `files`: data files decoded as runs (only the columns and rows the read needs);
//! - `keys_first`: for a filter's narrow key range, a file's key column decoded first
//!   and its other columns only for the rows in the range;
//! - `counters`: the bytes of data files the read took, and the files it skipped;
//! - [`lookup_cache`]: footers and key digests of the files lookups met, kept for the
//!   next lookup within a byte budget;
//! - `slices`: a section cut into key ranges (`key_range`), so that one bucket merges
//!   on every thread;
//! - `groups`: the independent merges (sections, slices) read as one stream;
//! - `prefetch`: runs decoded ahead, beside the merge;
//! - `workers`: the threads that run merges and decoding, kept for the next job;
//! - [`system_columns`]: the names of Paimon's system columns.

pub mod counters;
pub(crate) mod files;
pub(crate) mod groups;
mod key_range;
mod keys_first;
pub mod lookup_cache;
pub(crate) mod prefetch;
pub(crate) mod slices;
mod stored_pages;
pub mod system_columns;
mod workers;

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::SchemaRef;

use crate::engine::Algorithm;
use crate::error::Result;
use crate::fold::MergeFunction;
use crate::merge::plan::MergeOptions;
use crate::merge::stream::{merge, MergeStream};
use crate::runs::version::VersionColumns;
use counters::ReadCounters;
pub use files::{parquet_file, run_of_files, run_of_parquet, DataFile, Fetch};
use groups::{merge_groups, GroupOptions};
use key_range::KeyRange;
use lookup_cache::LookupCache;
pub use prefetch::Prefetch;
use slices::{groups_of_sections, narrow_runs};

/// How a table's sections are read: the table's merge rules and the read's shape.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// The primary key columns.
    pub key: Vec<String>,
    /// The sequence columns (`sequence.field`), which order a key's versions before
    /// their sequence numbers do.
    pub sequence: Vec<String>,
    /// The sequence columns order descending (`sequence.field.sort-order`).
    pub descending: bool,
    /// How the versions of a key fold (the table's merge engine).
    pub merge: MergeFunction,
    /// Rows per output batch (the last may be shorter).
    pub batch_size: usize,
    /// The output columns, in this order (all of the read's schema when `None`).
    pub columns: Option<Vec<String>>,
    /// Most threads merging or decoding at once (at least 1).
    pub threads: usize,
    /// Only keys whose first column lies in these bounds are wanted (a filter's): each
    /// file is read only where its page or row-group statistics say such keys may be.
    pub key_range: Option<KeyBounds>,
    /// Where a read with a `key_range` keeps its files' footers and key digests for the
    /// next one, and finds them (none: each read decodes its files' key pages).
    pub cache: Option<Arc<LookupCache>>,
    /// Bytes of merged batches each merge may have ready for the reader (one batch at
    /// least). `None`: a share of 128 MiB (`READ_AHEAD_BYTES`), so that merges ahead of
    /// the reader's turn keep their threads busy. A reader slower than the merge (a
    /// compaction writing its file) fills whatever it is given: `Some(0)` keeps one.
    pub read_ahead: Option<usize>,
    /// Each key is at most once among the live rows of the sections' files (a read of
    /// compacted files only: deletion vectors, first-row): a section of one file passes
    /// its rows as stored, without a merge ([`crate::merge::stream::merge_group`]).
    pub lone_runs_as_stored: bool,
}

/// Bounds of the first key column, each a one-value array (`None`: unbounded): at least
/// `lower`, below `upper`.
#[derive(Debug, Clone, Default)]
pub struct KeyBounds {
    /// The least value wanted.
    pub lower: Option<ArrayRef>,
    /// The least value above those wanted.
    pub upper: Option<ArrayRef>,
}

impl ReadOptions {
    /// A deduplicating read of a table keyed by `key`, in batches of 8192 rows, on one thread.
    pub fn new(key: &[&str]) -> Self {
        Self {
            key: key.iter().map(|k| k.to_string()).collect(),
            sequence: Vec::new(),
            descending: false,
            merge: MergeFunction::default(),
            batch_size: 8192,
            columns: None,
            threads: 1,
            key_range: None,
            cache: None,
            read_ahead: None,
            lone_runs_as_stored: false,
        }
    }
}

/// Reads the `sections` of a table as one stream, section after section. `schema` is
/// the read's: the table's columns it reads, then Paimon's two system columns
/// ([`system_columns::SEQUENCE_NUMBER`], [`system_columns::VALUE_KIND`]), which order
/// and classify the versions of a key. Each section is merged on its own, up to
/// `options.threads` at once; with fewer sections than threads, each is cut into key
/// ranges (`slices`) and the spare threads decode runs ahead.
pub fn read_sections(
    schema: SchemaRef,
    sections: Vec<Vec<Vec<DataFile>>>,
    options: ReadOptions,
) -> Result<MergeStream> {
    let ReadOptions {
        key,
        sequence,
        descending,
        merge,
        batch_size,
        columns,
        threads,
        key_range,
        cache,
        read_ahead,
        lone_runs_as_stored,
    } = options;
    let versions = VersionColumns {
        sequence,
        descending,
        system_sequence: Some(system_columns::SEQUENCE_NUMBER.into()),
        row_kind: Some(system_columns::VALUE_KIND.into()),
    };
    let first_key = key.first().and_then(|k| schema.index_of(k).ok());
    let counters = Arc::new(ReadCounters::default());
    // Only a narrow read keeps what it met: a whole read would fill the cache with
    // files no lookup may come back to.
    let cache = cache.filter(|_| key_range.is_some());
    let counted =
        |file: DataFile| DataFile { counters: Some(counters.clone()), cache: cache.clone(), ..file };
    let sections: Vec<Vec<Vec<DataFile>>> = sections
        .into_iter()
        .map(|runs| runs.into_iter().map(|files| files.into_iter().map(counted).collect()).collect())
        .collect();
    let sections = match (key_range, first_key) {
        (Some(bounds), Some(column)) => {
            let range = Arc::new(KeyRange { column, lower: bounds.lower, upper: bounds.upper });
            sections.into_iter().map(|runs| narrow_runs(&schema, runs, &range)).collect()
        }
        _ => sections,
    };
    let merge = MergeOptions { key, versions, merge, algorithm: Algorithm::LoserTree, batch_size, columns };
    let groups = groups_of_sections(&schema, sections, first_key, threads, batch_size);
    // A table's runs may hold a key more than once (see `MergeFunction::for_partial_run`).
    let group = GroupOptions { merge, threads, strict: false, read_ahead, lone_runs_as_stored };
    let stream = merge_groups(schema, groups, group)?;
    Ok(stream.with_read_counters(counters))
}

/// Parquet files of one schema merged on `threads` threads, in key ranges where the
/// files' statistics allow (`slices`); files of different schemas merge as separate
/// runs (where the merge reports the difference).
pub fn merge_parquet_files(
    paths: Vec<PathBuf>,
    options: MergeOptions,
    threads: usize,
) -> Result<MergeStream> {
    let files = paths.into_iter().map(parquet_file).collect::<Result<Vec<_>>>()?;
    let schema_of = |f: &DataFile| f.metadata.as_ref().expect("read with the file").schema().clone();
    let Some(schema) = files.first().map(schema_of) else { return merge(Vec::new(), options) };
    let batch_size = options.batch_size;
    if files.iter().any(|f| schema_of(f) != schema) {
        let prefetch = Prefetch::new(threads);
        let runs = files
            .into_iter()
            .map(|f| prefetch.run(run_of_files(schema_of(&f), vec![f], batch_size)))
            .collect();
        return merge(runs, options);
    }
    let first_key = options.key.first().and_then(|k| schema.index_of(k).ok());
    let runs = vec![files.into_iter().map(|f| vec![f]).collect()];
    let groups = groups_of_sections(&schema, runs, first_key, threads, batch_size);
    let strict = options.merge.folds();
    let group =
        GroupOptions { merge: options, threads, strict, read_ahead: None, lone_runs_as_stored: false };
    merge_groups(schema, groups, group)
}
