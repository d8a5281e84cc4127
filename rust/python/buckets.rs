//! Bucket functions: merge-core's value-stable hash (`upsert_files` splits input files
//! by key with it) and Paimon's (a table's writes assign buckets with it).

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_pyarrow::{FromPyArrow, ToPyArrow};
use pyo3::prelude::*;

use super::errors::to_py_err;
use super::gil::guard;

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

/// The Paimon bucket (`0..buckets`, a `pyarrow.Int32Array`) of each row of `batch` by the
/// bucket key `columns`, as Paimon's Java writer computes it.
#[pyfunction]
pub(crate) fn paimon_bucket_ids<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    columns: Vec<String>,
    buckets: i32,
) -> PyResult<Bound<'py, PyAny>> {
    let arrays = columns_by_name(py, batch, &columns, "bucket key")?;
    let ids = guard(py, || crate::bucket::paimon_bucket_ids(&arrays, &columns, buckets))?;
    ids.to_data().to_pyarrow(py)
}

/// Java's `BinaryRow.hashCode` (a `pyarrow.Int32Array`) of each row of `batch`'s
/// `columns`: the key hashes a dynamic-bucket table's index files hold.
#[pyfunction]
pub(crate) fn paimon_row_hashes<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    columns: Vec<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let arrays = columns_by_name(py, batch, &columns, "key")?;
    let hashes = guard(py, || crate::bucket::paimon_row_hashes(&arrays, &columns))?;
    hashes.to_data().to_pyarrow(py)
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
