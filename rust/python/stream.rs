//! `merge_core.Stream`: the lazy result of a merge, iterable from Python and exportable
//! through the Arrow C stream interface (`__arrow_c_stream__`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::{IntoPyArrow, Table, ToPyArrow};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

use super::errors::to_py_err;
use super::gil::{guard, release};
use crate::error::MergeError;
use crate::merge::stream::{MergeReader, MergeStream, StatsHandle};

/// A lazy stream of merged record batches.
#[pyclass(name = "Stream", module = "merge_core")]
pub(crate) struct PyStream {
    inner: Mutex<Option<MergeStream>>,
    schema: SchemaRef,
    stats: StatsHandle,
    /// Figures known before the stream ran (a table read's pruning), shown with `stats`.
    extra_stats: Vec<(String, u64)>,
}

impl PyStream {
    pub(crate) fn new(stream: MergeStream) -> Self {
        Self {
            schema: stream.schema(),
            stats: stream.stats_handle(),
            inner: Mutex::new(Some(stream)),
            extra_stats: Vec::new(),
        }
    }

    pub(crate) fn with_extra_stats(mut self, stats: Vec<(String, u64)>) -> Self {
        self.extra_stats = stats;
        self
    }

    /// Takes the stream out (it is consumed by whoever takes it).
    fn take(&self) -> PyResult<MergeStream> {
        let mut slot = self.inner.try_lock().map_err(|_| busy())?;
        slot.take().ok_or_else(consumed)
    }
}

impl Drop for PyStream {
    fn drop(&mut self) {
        if let Some(stream) = self.inner.get_mut().ok().and_then(|slot| slot.take()) {
            Python::attach(|py| release(py, stream));
        }
    }
}

fn busy() -> PyErr {
    PyRuntimeError::new_err("the stream is being read by another thread")
}

fn consumed() -> PyErr {
    PyRuntimeError::new_err("the stream was already consumed (exported or read to the end by read_all)")
}

#[pymethods]
impl PyStream {
    /// The output schema, as a `pyarrow.Schema`.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.schema.to_pyarrow(py)
    }

    /// Figures so far: runs, rows_in, rows_out, key_comparisons (and a sort's, a table
    /// read's: bytes_read, files_skipped).
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.stats.get();
        let dict = PyDict::new(py);
        dict.set_item("runs", s.runs)?;
        dict.set_item("rows_in", s.rows_in)?;
        dict.set_item("rows_out", s.rows_out)?;
        dict.set_item("key_comparisons", s.key_comparisons)?;
        if let Some(sort) = s.sort {
            dict.set_item("spilled_runs", sort.spilled_runs)?;
            dict.set_item("spilled_bytes", sort.spilled_bytes)?;
            dict.set_item("merge_passes", sort.merge_passes)?;
            dict.set_item("peak_memory_bytes", sort.peak_memory_bytes)?;
        }
        if let Some(read) = s.read {
            dict.set_item("bytes_read", read.bytes_read)?;
            dict.set_item("files_skipped", read.files_skipped)?;
        }
        for (name, value) in &self.extra_stats {
            dict.set_item(name, value)?;
        }
        Ok(dict)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch as a `pyarrow.RecordBatch`; the merge runs without the GIL.
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut slot = self.inner.try_lock().map_err(|_| busy())?;
        let Some(stream) = slot.as_mut() else { return Ok(None) };
        if let Err(interrupt) = py.check_signals() {
            release(py, slot.take()); // the inputs and buffered batches go now
            return Err(interrupt);
        }
        match guard(py, || stream.next().transpose()) {
            Ok(Some(batch)) => Ok(Some(batch.to_pyarrow(py)?)),
            Ok(None) => {
                release(py, slot.take());
                Ok(None)
            }
            Err(e) => {
                release(py, slot.take());
                Err(e)
            }
        }
    }

    /// Reads the rest of the stream into a `pyarrow.Table`.
    fn read_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut stream = self.take()?;
        let mut batches: Vec<RecordBatch> = Vec::new();
        let read = loop {
            if let Err(interrupt) = py.check_signals() {
                break Err(interrupt);
            }
            match guard(py, || stream.next().transpose()) {
                Ok(Some(batch)) => batches.push(batch),
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        release(py, stream);
        read?;
        let table = Table::try_new(batches, self.schema.clone()).map_err(|e| to_py_err(py, e.into()))?;
        table.into_pyarrow(py)
    }

    /// Exports the rest of the stream through the Arrow C stream interface.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema; // the spec allows ignoring it; callers cast if they need to
        let reader = PanicSafeReader { inner: MergeReader(self.take()?), failed: false };
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }

    fn __repr__(&self) -> String {
        let s = self.stats.get();
        format!(
            "<merge_core.Stream runs={} rows_out={} schema=[{}]>",
            s.runs,
            s.rows_out,
            field_names(&self.schema)
        )
    }
}

fn field_names(schema: &SchemaRef) -> String {
    schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
}

/// A reader handed to foreign code: a panic inside an `extern "C"` callback would abort
/// the process, so it is caught here and reported as a stream error.
struct PanicSafeReader {
    inner: MergeReader,
    failed: bool,
}

impl Iterator for PanicSafeReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = catch_unwind(AssertUnwindSafe(|| self.inner.next())).unwrap_or_else(|panic| {
            Some(Err(ArrowError::ExternalError(Box::new(MergeError::from_panic(panic)))))
        });
        self.failed = matches!(item, Some(Err(_)));
        item
    }
}

impl RecordBatchReader for PanicSafeReader {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
}
