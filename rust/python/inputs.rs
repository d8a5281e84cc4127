//! Runs from Python objects: Arrow C streams, and iterables of `pyarrow.RecordBatch`
//! (`merge_core.inputs.IterableRun`), which are pulled batch by batch.
//!
//! An iterable is not turned into a C stream in Python: such a stream declares one schema
//! and hands over each batch's buffers as that schema's, so a batch of another type
//! would be read as the declared one (garbage, or reads past a buffer). Pulled here, each
//! batch crosses with its own schema and the run's cursor checks it like any other.

use arrow_array::ffi_stream::RecordBatchStreamReader;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::FromPyArrow;
use arrow_schema::{ArrowError, Schema, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::{PyIterator, PyString};
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::invalid;
use crate::runs::Run;

/// A run from an object with `__arrow_c_stream__` or an `IterableRun`.
pub(crate) fn read_run(obj: &Bound<'_, PyAny>) -> PyResult<Run> {
    if obj.hasattr("__arrow_c_stream__")? {
        let reader = RecordBatchStreamReader::from_pyarrow_bound(obj)?;
        return Ok(Run { schema: reader.schema(), batches: Box::new(reader) });
    }
    let schema: SchemaRef = Arc::new(Schema::from_pyarrow_bound(&obj.getattr("schema")?)?);
    let batches = PyBatches { iterator: obj.getattr("batches")?.try_iter()?.unbind(), number: 0 };
    Ok(Run { schema, batches: Box::new(batches) })
}

/// The path of a run given as one (a `str` or an `os.PathLike`): a Parquet file.
pub(crate) fn parquet_path(obj: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    if obj.is_instance_of::<PyString>() || obj.hasattr("__fspath__")? {
        return Ok(Some(obj.extract()?));
    }
    Ok(None)
}

/// The batches of a Python iterator, converted one at a time with the GIL held.
struct PyBatches {
    iterator: Py<PyIterator>,
    /// Batches pulled so far, for messages.
    number: usize,
}

impl Iterator for PyBatches {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        Python::attach(|py| {
            let item = match self.iterator.bind(py).clone().next()? {
                // The caller's own exception travels as itself (see `errors::to_py_err`).
                Err(raised) => return Some(Err(ArrowError::ExternalError(Box::new(raised)))),
                Ok(item) => item,
            };
            let number = self.number;
            self.number += 1;
            Some(RecordBatch::from_pyarrow_bound(&item).map_err(|_| {
                let type_name = item.get_type().name().map_or("?".into(), |n| n.to_string());
                let e =
                    invalid!("batch {number} of an iterable run is a {type_name}, not a pyarrow RecordBatch");
                ArrowError::ExternalError(Box::new(e))
            }))
        })
    }
}
