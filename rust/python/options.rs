//! Merge-function specs from Python. The Python layer turns `"deduplicate"` or an
//! option object (`mc.Aggregate(...)`) into a dict `{"function": name, **options}`;
//! this is the one place that reads it.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::fold::{AggFunction, AggregateField, MergeFunction, SequenceGroup};

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
            spec.check_keys(&[
                "function",
                "ignore_delete",
                "remove_record_on_delete",
                "sequence_groups",
                "fields",
                "default",
                "remove_record_on_sequence_group",
            ])?;
            let groups: Vec<(Vec<String>, Vec<String>)> = match spec.get("sequence_groups")? {
                Some(g) => g.extract().map_err(|_| {
                    bad("sequence_groups must be a list of (ordering columns, protected columns) pairs"
                        .into())
                })?,
                None => Vec::new(),
            };
            MergeFunction::PartialUpdate {
                ignore_delete: spec.flag("ignore_delete")?,
                remove_record_on_delete: spec.flag("remove_record_on_delete")?,
                sequence_groups: groups
                    .into_iter()
                    .map(|(ordering, fields)| SequenceGroup { ordering, fields })
                    .collect(),
                fields: match spec.get("fields")? {
                    Some(f) => aggregate_fields(&f)?,
                    None => Vec::new(),
                },
                default: match spec.get("default")? {
                    Some(d) if !d.is_none() => Some(aggregate_field("the default", &d)?),
                    _ => None,
                },
                remove_record_on_sequence_group: match spec.get("remove_record_on_sequence_group")? {
                    Some(names) => names.extract().map_err(|_| {
                        bad("remove_record_on_sequence_group must be a list of column names".into())
                    })?,
                    None => Vec::new(),
                },
            }
        }
        "aggregate" | "aggregation" => {
            spec.check_keys(&["function", "fields", "default", "remove_record_on_delete", "ignore_delete"])?;
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
                ignore_delete: spec.flag("ignore_delete")?,
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
    name.parse().map_err(|e: crate::error::MergeError| bad(e.to_string()))
}

/// `{"col": "sum" | {"function": ..., "delimiter": ..., "distinct": ..., "ignore_retract": ...}}`
fn aggregate_fields(fields: &Bound<'_, PyAny>) -> PyResult<Vec<(String, AggregateField)>> {
    let fields = fields.cast::<PyDict>().map_err(|_| bad("aggregate fields must be a dict".into()))?;
    fields
        .iter()
        .map(|(column, field)| {
            let column: String = column.extract()?;
            let field = aggregate_field(&format!("aggregate field '{column}'"), &field)?;
            Ok((column, field))
        })
        .collect()
}

/// A function name, or a dict of the function and its options.
fn aggregate_field(what: &str, field: &Bound<'_, PyAny>) -> PyResult<AggregateField> {
    let Ok(dict) = field.cast::<PyDict>() else { return Ok(AggregateField::new(agg_function(field)?)) };
    let spec = Spec { dict, what: what.to_string() };
    spec.check_keys(&["function", "delimiter", "distinct", "ignore_retract"])?;
    let function = spec.get("function")?.ok_or_else(|| bad(format!("{} lacks 'function'", spec.what)))?;
    let mut field = AggregateField::new(agg_function(&function)?);
    if let Some(d) = spec.get("delimiter")? {
        field.delimiter =
            d.extract().map_err(|_| bad(format!("{}: delimiter must be a string", spec.what)))?;
    }
    field.distinct = spec.flag("distinct")?;
    field.ignore_retract = spec.flag("ignore_retract")?;
    Ok(field)
}
