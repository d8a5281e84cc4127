//! The native pieces of `merge_core.Table`: bucketing keys and merging a read's groups.
//! The table's files, snapshots and commits are handled in Python (`merge_core/table/`).

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_pyarrow::{FromPyArrow, ToPyArrow};
use arrow_schema::Schema;
use pyo3::prelude::*;

use super::errors::{guard, to_py_err};
use super::inputs::read_run;
use super::options::merge_function;
use super::stream::PyStream;
use crate::groups::{merge_groups as merge_groups_impl, GroupOptions};
use crate::version::VersionColumns;
use crate::MergeOptions;

/// The bucket (`0..buckets`, a `pyarrow.UInt32Array`) of each row of `batch` by `key`.
#[pyfunction]
pub(crate) fn bucket_ids<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    key: Vec<String>,
    buckets: u32,
) -> PyResult<Bound<'py, PyAny>> {
    let columns = columns_by_name(py, batch, &key, "key")?;
    let ids = guard(py, || crate::bucket::bucket_ids(&columns, &key, buckets))?;
    ids.to_data().to_pyarrow(py)
}

/// The columns of the pyarrow `batch` named `names`; a missing one is an
/// `InvalidInputError` naming it as a `what` column.
pub(crate) fn columns_by_name(
    py: Python<'_>,
    batch: &Bound<'_, PyAny>,
    names: &[String],
    what: &str,
) -> PyResult<Vec<ArrayRef>> {
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    names
        .iter()
        .map(|name| {
            let column = batch.column_by_name(name).cloned();
            column
                .ok_or_else(|| to_py_err(py, crate::error::invalid!("no {what} column '{name}' in the data")))
        })
        .collect()
}

/// Merges each group of runs on its own into one lazy stream (a table read or compaction).
#[pyfunction]
#[allow(clippy::too_many_arguments)] // mirrors the Python call one to one
#[pyo3(signature = (schema, groups, key, sequence, descending, system_sequence, row_kind, merge, batch_size, columns, partial, stats, threads))]
pub(crate) fn merge_groups(
    py: Python<'_>,
    schema: &Bound<'_, PyAny>,
    groups: Vec<Vec<Bound<'_, PyAny>>>,
    key: Vec<String>,
    sequence: Vec<String>,
    descending: bool,
    system_sequence: Option<String>,
    row_kind: Option<String>,
    merge: &Bound<'_, PyAny>,
    batch_size: usize,
    columns: Option<Vec<String>>,
    partial: bool,
    stats: Vec<(String, u64)>,
    threads: usize,
) -> PyResult<PyStream> {
    let schema = Arc::new(Schema::from_pyarrow_bound(schema)?);
    let groups = groups
        .iter()
        .map(|runs| runs.iter().map(read_run).collect::<PyResult<Vec<_>>>())
        .collect::<PyResult<Vec<_>>>()?;
    let options = GroupOptions {
        merge: MergeOptions {
            key,
            versions: VersionColumns { sequence, descending, system_sequence, row_kind },
            merge: merge_function(merge)?,
            algorithm: crate::Algorithm::LoserTree,
            batch_size,
            columns,
        },
        partial,
        threads,
    };
    let stream = guard(py, || merge_groups_impl(schema, groups, options))?;
    Ok(PyStream::new(stream).with_extra_stats(stats))
}
