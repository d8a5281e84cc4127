//! Merge-function specs from Python. The Python layer turns `"deduplicate"` or
//! `mc.Deduplicate(...)` into a dict `{"function": name, **options}`; this is the one
//! place that reads it.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::fold::MergeFunction;

fn bad(msg: String) -> PyErr {
    // Raised before any merge work; the Python wrapper re-raises it as InvalidInputError.
    PyValueError::new_err(msg)
}

pub(crate) fn merge_function(spec: &Bound<'_, PyAny>) -> PyResult<MergeFunction> {
    let spec = spec.cast::<PyDict>().map_err(|_| bad("merge spec must be a dict".into()))?;
    let name: String =
        spec.get_item("function")?.ok_or_else(|| bad("merge spec lacks 'function'".into()))?.extract()?;
    let flag = |key: &str, default: bool| -> PyResult<bool> {
        spec.get_item(key)?.map_or(Ok(default), |v| v.extract())
    };
    let allowed: &[&str] = match name.as_str() {
        "none" => &[],
        "deduplicate" => &["ignore_delete", "drop_deletes"],
        other => {
            return Err(bad(format!("unknown merge function '{other}' (expected 'deduplicate' or 'none')")))
        }
    };
    for key in spec.keys() {
        let key: String = key.extract()?;
        if key != "function" && !allowed.contains(&key.as_str()) {
            return Err(bad(format!("merge function '{name}' has no option '{key}'")));
        }
    }
    Ok(match name.as_str() {
        "none" => MergeFunction::None,
        _ => MergeFunction::Deduplicate {
            ignore_delete: flag("ignore_delete", false)?,
            drop_deletes: flag("drop_deletes", true)?,
        },
    })
}
