//! The `merge_core._native` extension module: a thin layer that converts Python
//! arguments, runs the Rust merge without the GIL, and turns errors and panics into
//! `merge_core` exceptions. The public Python API lives in `python/merge_core/`.

mod buckets;
mod errors;
mod gil;
mod inputs;
mod options;
mod paimon;
mod sort;
mod stream;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::read::{merge_parquet_files, run_of_parquet, Prefetch};
use errors::to_py_err;
use gil::guard;
use stream::PyStream;

/// Merges sorted runs (objects with `__arrow_c_stream__`, `IterableRun`s, or paths of
/// Parquet files, which are decoded ahead on up to `threads` workers) into a lazy stream.
#[pyfunction]
fn merge(py: Python<'_>, runs: Vec<Bound<'_, PyAny>>, options: &Bound<'_, PyDict>) -> PyResult<PyStream> {
    let (options, threads) = options::merge_options(py, options)?;
    let batch_size = options.batch_size;
    let paths = runs.iter().map(inputs::parquet_path).collect::<PyResult<Option<Vec<_>>>>()?;
    if let Some(paths) = paths.filter(|paths| !paths.is_empty()) {
        let stream = guard(py, || merge_parquet_files(paths, options, threads))?;
        return Ok(PyStream::new(stream));
    }
    let prefetch = Prefetch::new(threads);
    let runs = runs
        .iter()
        .map(|run| match inputs::parquet_path(run)? {
            Some(path) => {
                let file = run_of_parquet(path, batch_size).map_err(|e| to_py_err(py, e))?;
                Ok(prefetch.run(file))
            }
            None => inputs::read_run(run),
        })
        .collect::<PyResult<Vec<_>>>()?;
    let stream = guard(py, || crate::merge::stream::merge(runs, options))?;
    Ok(PyStream::new(stream))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_class::<PyStream>()?;
    m.add_class::<sort::PySortBuffer>()?;
    m.add_function(wrap_pyfunction!(sort::sort, m)?)?;
    m.add_function(wrap_pyfunction!(sort::retract_refusal, m)?)?;
    m.add_function(wrap_pyfunction!(buckets::bucket_ids, m)?)?;
    m.add_function(wrap_pyfunction!(paimon::read_paimon, m)?)?;
    m.add_class::<paimon::PlannedFile>()?;
    m.add_function(wrap_pyfunction!(paimon::lookup_cache, m)?)?;
    m.add_function(wrap_pyfunction!(buckets::paimon_bucket_ids, m)?)?;
    m.add_function(wrap_pyfunction!(buckets::paimon_row_hashes, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
