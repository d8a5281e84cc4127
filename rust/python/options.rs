//! Merge-function specs from Python. The Python layer turns `"deduplicate"` or an
//! option object (`mc.Aggregate(...)`) into a dict `{"function": name, **options}`;
//! this is the one place that reads it.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::fold::{AggFunction, AggregateField, MergeFunction};

fn bad(msg: String) -> PyErr {
    // Raised before any merge work; the Python wrapper re-raises it as InvalidInputError.
    PyValueError::new_err(msg)
}

/// Reads a spec dict, refusing keys outside `allowed`.
struct Spec<'a, 'py> {
    dict: &'a Bound<'py, PyDict>,
    what: String,
}

impl<'py> Spec<'_, 'py> {
    fn check_keys(&self, allowed: &[&str]) -> PyResult<()> {
        for key in self.dict.keys() {
            let key: String = key.extract()?;
            if !allowed.contains(&key.as_str()) {
                return Err(bad(format!(
                    "{} has no option '{key}' (options: {})",
                    self.what,
                    allowed.join(", ")
                )));
            }
        }
        Ok(())
    }

    fn get(&self, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.dict.get_item(key)
    }

    fn flag(&self, key: &str) -> PyResult<bool> {
        self.get(key)?
            .map_or(Ok(false), |v| v.extract().map_err(|_| bad(format!("{key} must be True or False"))))
    }
}

pub(crate) fn merge_function(spec: &Bound<'_, PyAny>) -> PyResult<MergeFunction> {
    let dict = spec.cast::<PyDict>().map_err(|_| bad("merge spec must be a dict".into()))?;
    let name: String =
        dict.get_item("function")?.ok_or_else(|| bad("merge spec lacks 'function'".into()))?.extract()?;
    let spec = Spec { dict, what: format!("merge function '{name}'") };
    Ok(match name.as_str() {
        "none" => {
            spec.check_keys(&["function"])?;
            MergeFunction::None
        }
        "deduplicate" => {
            spec.check_keys(&["function", "ignore_delete", "drop_deletes"])?;
            let drop_deletes = spec.get("drop_deletes")?.map_or(Ok(true), |v| v.extract())?;
            MergeFunction::Deduplicate { ignore_delete: spec.flag("ignore_delete")?, drop_deletes }
        }
        "first-row" => {
            spec.check_keys(&["function", "ignore_delete"])?;
            MergeFunction::FirstRow { ignore_delete: spec.flag("ignore_delete")? }
        }
        "partial-update" => {
            spec.check_keys(&["function", "ignore_delete", "remove_record_on_delete"])?;
            MergeFunction::PartialUpdate {
                ignore_delete: spec.flag("ignore_delete")?,
                remove_record_on_delete: spec.flag("remove_record_on_delete")?,
            }
        }
        "aggregate" | "aggregation" => {
            spec.check_keys(&["function", "fields", "default", "remove_record_on_delete"])?;
            let default = match spec.get("default")? {
                Some(d) => agg_function(&d)?,
                None => AggFunction::LastNonNullValue,
            };
            let fields = match spec.get("fields")? {
                Some(f) => aggregate_fields(&f)?,
                None => Vec::new(),
            };
            MergeFunction::Aggregate {
                fields,
                default,
                remove_record_on_delete: spec.flag("remove_record_on_delete")?,
            }
        }
        other => {
            return Err(bad(format!(
                "unknown merge function '{other}' (expected 'deduplicate', 'first-row', 'partial-update', \
                 'aggregate' or 'none')"
            )))
        }
    })
}

fn agg_function(name: &Bound<'_, PyAny>) -> PyResult<AggFunction> {
    let name: String =
        name.extract().map_err(|_| bad("an aggregate function is named by a string".into()))?;
    name.parse().map_err(|e: crate::MergeError| bad(e.to_string()))
}

/// `{"col": "sum" | {"function": ..., "delimiter": ..., "ignore_retract": ...}}`
fn aggregate_fields(fields: &Bound<'_, PyAny>) -> PyResult<Vec<(String, AggregateField)>> {
    let fields = fields.cast::<PyDict>().map_err(|_| bad("aggregate fields must be a dict".into()))?;
    fields
        .iter()
        .map(|(column, field)| {
            let column: String = column.extract()?;
            let field = match field.cast::<PyDict>() {
                Err(_) => AggregateField::new(agg_function(&field)?),
                Ok(dict) => {
                    let spec = Spec { dict, what: format!("aggregate field '{column}'") };
                    spec.check_keys(&["function", "delimiter", "ignore_retract"])?;
                    let function = spec
                        .get("function")?
                        .ok_or_else(|| bad(format!("{} lacks 'function'", spec.what)))?;
                    let mut field = AggregateField::new(agg_function(&function)?);
                    if let Some(d) = spec.get("delimiter")? {
                        field.delimiter = d.extract()?;
                    }
                    field.ignore_retract = spec.flag("ignore_retract")?;
                    field
                }
            };
            Ok((column, field))
        })
        .collect()
}
