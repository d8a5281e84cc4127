//! merge-core: the merge engine of an LSM data lake, over Arrow record batches.
//!
//! A primary-key table stores each write as a *sorted run*; a read merges the runs key
//! by key and folds the versions of each key with a *merge function*. [`merge`] does
//! that with a loser tree (or Paimon's own loser tree, or a binary heap, the baseline).
//!
//! Layout, in the order data flows (a table's files decoded into runs, the runs merged
//! key by key, each key's versions folded, the output built):
//! - [`read`]: a table's read, composed in one place ([`read::read_sections`]): its
//!   Parquet data files decoded as runs ahead of the merge, each bucket's merge (cut
//!   into key ranges) on worker threads, the merges' outputs read as one stream;
//! - `merge`: the merge of sorted runs ([`merge`]): what it plans before it reads a row,
//!   and the stream composing the runs' cursors, an engine and a merge function;
//! - `engine`: the loser trees and the heap, producing key groups;
//! - `fold`: merge functions folding a key group, and the output builder they fill;
//! - `runs`: what the three stand on: cursors over the sorted runs, the batches their
//!   rows stand in, the version order of a key's rows, single values read from columns;
//! - `keys`: key columns in comparable form (fast paths per type, row format otherwise);
//! - `sort`: the spillable external sort ([`SortBuffer`]) and its spill files;
//! - [`bucket`]: the bucket of a key: a value-stable hash, and Paimon's (the hash of the
//!   key's `BinaryRow`);
//! - `python` (feature `python`): the `merge_core._native` extension module.
//!
//! ```
//! use std::sync::Arc;
//! use arrow_array::{Int64Array, RecordBatch, cast::AsArray, types::Int64Type};
//! use arrow_schema::{DataType, Field, Schema};
//! use merge_core::{merge, MergeOptions, Run};
//!
//! let schema = Arc::new(Schema::new(vec![
//!     Field::new("k", DataType::Int64, false),
//!     Field::new("v", DataType::Int64, false),
//! ]));
//! let run = |k: Vec<i64>, v: Vec<i64>| {
//!     let batch = RecordBatch::try_new(schema.clone(), vec![
//!         Arc::new(Int64Array::from(k)), Arc::new(Int64Array::from(v)),
//!     ]).unwrap();
//!     Run::from_batches(schema.clone(), vec![batch])
//! };
//! // The later run is newer: key 2 takes value 20.
//! let runs = vec![run(vec![1, 2], vec![1, 2]), run(vec![2, 3], vec![20, 30])];
//! let out: Vec<_> = merge(runs, MergeOptions::new(&["k"])).unwrap().collect::<Result<_, _>>().unwrap();
//! assert_eq!(out[0].column(1).as_primitive::<Int64Type>().values(), &[1, 20, 30]);
//! ```
#![warn(missing_docs)]

pub mod bucket;
pub(crate) mod engine;
mod error;
pub(crate) mod fold;
pub(crate) mod keys;
mod merge;
pub mod read;
pub(crate) mod runs;
pub(crate) mod sort;

#[cfg(feature = "python")]
mod python;

#[cfg(test)]
mod tests;

pub use engine::Algorithm;
pub use error::{MergeError, Result};
pub use fold::{AggFunction, AggregateField, MergeFunction, SequenceGroup};
pub use merge::plan::MergeOptions;
#[doc(hidden)]
pub use merge::stream::merge_order_only;
pub use merge::stream::{merge, MergeReader, MergeStats, MergeStream, SortStats, StatsHandle};
pub use runs::version::{RowKind, VersionColumns};
pub use runs::{BatchIter, Run};
pub use sort::{Compression, SortBuffer, SortOptions};
