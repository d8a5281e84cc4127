//! `merge_core.SortBuffer` and `merge_core.sort`: the spillable sort from Python.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arrow_pyarrow::FromPyArrow;
use arrow_schema::Schema;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::errors::to_py_err;
use super::gil::{guard, release};
use super::inputs::read_run;
use super::options::sort_options;
use super::stream::PyStream;
use crate::error::MergeError;
use crate::read::{run_of_parquet, Prefetch};
use crate::runs::version::RowKind;
use crate::runs::Run;
use crate::sort::SortBuffer;

/// Feeds every batch of `run` into `buffer`; the work runs without the GIL and
/// KeyboardInterrupt is checked between batches.
fn write_all(py: Python<'_>, buffer: &mut SortBuffer, mut run: Run) -> PyResult<()> {
    loop {
        py.check_signals()?;
        let batch = guard(py, || run.batches.next().transpose().map_err(MergeError::from))?;
        match batch {
            Some(batch) => guard(py, || buffer.write(&batch))?,
            None => return Ok(()),
        }
    }
}

/// Sorts data larger than memory by spilling sorted runs to disk.
#[pyclass(name = "SortBuffer", module = "merge_core")]
pub(crate) struct PySortBuffer {
    inner: Mutex<Option<SortBuffer>>,
}

impl PySortBuffer {
    fn with<T>(&self, f: impl FnOnce(&mut SortBuffer) -> PyResult<T>) -> PyResult<T> {
        let mut slot = self
            .inner
            .try_lock()
            .map_err(|_| PyRuntimeError::new_err("the sort buffer is busy in another thread"))?;
        let buffer =
            slot.as_mut().ok_or_else(|| PyRuntimeError::new_err("the sort buffer was finished or closed"))?;
        f(buffer)
    }
}

impl Drop for PySortBuffer {
    fn drop(&mut self) {
        if let Some(buffer) = self.inner.get_mut().ok().and_then(|slot| slot.take()) {
            Python::attach(|py| release(py, buffer));
        }
    }
}

#[pymethods]
impl PySortBuffer {
    #[new]
    fn new(py: Python<'_>, schema: &Bound<'_, PyAny>, options: &Bound<'_, PyDict>) -> PyResult<Self> {
        let schema = Schema::from_pyarrow_bound(schema)?;
        let options = sort_options(py, options)?;
        let buffer = SortBuffer::new(std::sync::Arc::new(schema), options).map_err(|e| to_py_err(py, e))?;
        Ok(Self { inner: Mutex::new(Some(buffer)) })
    }

    /// Adds the batches of a C-stream source (the wrapper turns batches and tables into one).
    fn write(&self, py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<()> {
        let run = read_run(source)?;
        self.with(|buffer| write_all(py, buffer, run))
    }

    /// Ends writing; returns the sorted data as a stream.
    fn finish(&self, py: Python<'_>) -> PyResult<PyStream> {
        let buffer = self.inner.try_lock().ok().and_then(|mut slot| slot.take());
        let buffer =
            buffer.ok_or_else(|| PyRuntimeError::new_err("the sort buffer was finished or closed"))?;
        Ok(PyStream::new(guard(py, || buffer.finish())?))
    }

    /// Drops the buffered data and deletes any spill files now.
    fn close(&self, py: Python<'_>) {
        let buffer = self.inner.lock().ok().and_then(|mut slot| slot.take());
        release(py, buffer);
    }

    /// Bytes of memory accounted for now.
    #[getter]
    fn memory_bytes(&self) -> PyResult<u64> {
        self.with(|b| Ok(b.stats().memory_bytes))
    }

    /// Most bytes of memory accounted for at once.
    #[getter]
    fn peak_memory_bytes(&self) -> PyResult<u64> {
        self.with(|b| Ok(b.stats().peak_memory_bytes))
    }

    /// Sorted runs written to disk so far.
    #[getter]
    fn spilled_runs(&self) -> PyResult<u64> {
        self.with(|b| Ok(b.stats().spilled_runs))
    }

    /// Bytes written to spill files so far.
    #[getter]
    fn spilled_bytes(&self) -> PyResult<u64> {
        self.with(|b| Ok(b.stats().spilled_bytes))
    }

    /// Rows written so far.
    #[getter]
    fn rows_written(&self) -> PyResult<u64> {
        self.with(|b| Ok(b.rows_written()))
    }

    /// The private directory holding this buffer's spill files, if one was created.
    #[getter]
    fn spill_path(&self) -> PyResult<Option<PathBuf>> {
        self.with(|b| Ok(b.spill_path()))
    }
}

/// Sorts a C-stream source, or a local Parquet file given by its path (decoded in Rust,
/// ahead of the sort on a thread of its own, in batches of the output's size), in one call.
#[pyfunction]
pub(crate) fn sort(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    options: &Bound<'_, PyDict>,
) -> PyResult<PyStream> {
    let options = sort_options(py, options)?;
    let run = match source.extract::<String>() {
        // Decoded on a thread of its own, beside the buffering and sorting.
        Ok(path) => Prefetch::new(1)
            .run(run_of_parquet(path.into(), options.batch_size).map_err(|e| to_py_err(py, e))?),
        Err(_) => read_run(source)?,
    };
    let mut buffer = SortBuffer::new(run.schema.clone(), options).map_err(|e| to_py_err(py, e))?;
    write_all(py, &mut buffer, run)?;
    Ok(PyStream::new(guard(py, || buffer.finish())?))
}

/// Why a table's write must refuse retracts of `kind` (a code, 1 `-U` or 3 `-D`) for a
/// sort buffer of `schema` with `options` (`None`: they are fine); see
/// `MergeFunction::retract_refusal`.
#[pyfunction]
pub(crate) fn retract_refusal(
    py: Python<'_>,
    schema: &Bound<'_, PyAny>,
    options: &Bound<'_, PyDict>,
    kind: i64,
) -> PyResult<Option<String>> {
    let schema = Arc::new(Schema::from_pyarrow_bound(schema)?);
    let options = sort_options(py, options)?;
    let kind =
        RowKind::from_code(kind).ok_or_else(|| PyValueError::new_err(format!("no row kind {kind}")))?;
    let function = options.merge.unwrap_or_default();
    function.retract_refusal(schema, &options.key, &options.versions, kind).map_err(|e| to_py_err(py, e))
}
