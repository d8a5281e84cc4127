//! merge-core: the merge engine of an LSM data lake, over Arrow record batches.
//!
//! A primary-key table stores each write as a *sorted run*; a read merges the runs key
//! by key and folds the versions of each key with a *merge function*. [`merge`] does
//! that with Paimon's loser tree (or a binary heap, the baseline).
//!
//! Layout, in the order data flows:
//! - [`keys`]: key columns in comparable form (fast paths per type, row format otherwise);
//! - `merge` (cursors over the runs, version order, stored batches, the output builder):
//!   the public [`merge`] tying the engine and the merge function together;
//! - [`engine`]: the loser tree and the heap, producing key groups;
//! - [`fold`]: merge functions folding a key group;
//! - [`read`]: a table's read: Parquet data files decoded as runs, ahead of the merge,
//!   each bucket's merge (cut into key ranges) on worker threads, read as one stream;
//! - [`bucket`]: the bucket of a key: a value-stable hash, and Paimon's (the hash of the
//!   key's `BinaryRow`);
//! - [`sort`]: the spillable external sort ([`SortBuffer`]) and its spill files;
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
pub mod engine;
mod error;
pub mod fold;
pub(crate) mod keys;
mod merge;
pub mod read;
pub mod sort;

#[cfg(feature = "python")]
mod python;

#[cfg(test)]
mod tests;

pub use engine::Algorithm;
pub use error::{MergeError, Result};
pub use fold::{AggFunction, AggregateField, MergeFunction, SequenceGroup};
pub use merge::plan::MergeOptions;
pub use merge::run::{BatchIter, Run};
#[doc(hidden)]
pub use merge::stream::merge_order_only;
pub use merge::stream::{merge, MergeReader, MergeStats, MergeStream, SortStats, StatsHandle};
pub use merge::version::{RowKind, VersionColumns};
pub use sort::{Compression, SortBuffer, SortOptions};
