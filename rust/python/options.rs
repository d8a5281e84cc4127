//! What crosses the boundary besides data: each native call's options dict, and the
//! merge-function spec in it (the Python layer turns `"deduplicate"` or an option object,
//! `mc.Aggregate(...)`, into a dict `{"function": name, **options}`). This is the one
//! place that reads them.

use std::path::PathBuf;

use arrow_array::{make_array, ArrayRef};
use arrow_data::ArrayData;
use arrow_pyarrow::FromPyArrow;
use pyo3::conversion::FromPyObjectOwned;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::errors::to_py_err;
use crate::fold::{AggFunction, AggregateField, MergeFunction, SequenceGroup};
use crate::merge::plan::MergeOptions;
use crate::read::lookup_cache::LookupCache;
use crate::read::{KeyBounds, ReadOptions};
use crate::runs::version::VersionColumns;
use crate::sort::SortOptions;

fn bad(msg: String) -> PyErr {
    // Raised before any merge work; the Python wrapper re-raises it as InvalidInputError.
    PyValueError::new_err(msg)
}

/// Refuses a key of `dict` outside `known`, naming `what` has it.
fn refuse_unknown(dict: &Bound<'_, PyDict>, what: &str, known: &[&str]) -> PyResult<()> {
    for key in dict.keys() {
        let key: String = key.extract()?;
        if !known.contains(&key.as_str()) {
            return Err(bad(format!("{what} has no option '{key}' (options: {})", known.join(", "))));
        }
    }
    Ok(())
}

/// Reads a spec dict, refusing keys outside `allowed`.
struct Spec<'a, 'py> {
    dict: &'a Bound<'py, PyDict>,
    what: String,
}

impl<'py> Spec<'_, 'py> {
    fn check_keys(&self, allowed: &[&str]) -> PyResult<()> {
        refuse_unknown(self.dict, &self.what, allowed)
    }

    fn get(&self, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.dict.get_item(key)
    }

    fn flag(&self, key: &str) -> PyResult<bool> {
        self.flag_or(key, false)
    }

    fn flag_or(&self, key: &str, absent: bool) -> PyResult<bool> {
        self.get(key)?
            .map_or(Ok(absent), |v| v.extract().map_err(|_| bad(format!("{key} must be True or False"))))
    }

    /// `drop_deletes`, true unless said otherwise (every folding function takes it).
    fn drop_deletes(&self) -> PyResult<bool> {
        self.flag_or("drop_deletes", true)
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
            MergeFunction::Deduplicate {
                ignore_delete: spec.flag("ignore_delete")?,
                drop_deletes: spec.drop_deletes()?,
            }
        }
        "first-row" => {
            spec.check_keys(&["function", "ignore_delete", "drop_deletes"])?;
            MergeFunction::FirstRow {
                ignore_delete: spec.flag("ignore_delete")?,
                drop_deletes: spec.drop_deletes()?,
            }
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
                "drop_deletes",
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
                drop_deletes: spec.drop_deletes()?,
            }
        }
        "aggregate" | "aggregation" => {
            spec.check_keys(&[
                "function",
                "fields",
                "default",
                "remove_record_on_delete",
                "ignore_delete",
                "drop_deletes",
            ])?;
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
                drop_deletes: spec.drop_deletes()?,
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

/// The options dict of one native call (`merge`, `read_paimon`, `sort`, `SortBuffer`):
/// every call across the boundary takes its data and one such dict, built by the Python
/// wrapper and read here; `_native.pyi` types each as a `TypedDict`. A key the call does
/// not know is refused, so a misspelt option never passes unread.
struct Options<'a, 'py> {
    dict: &'a Bound<'py, PyDict>,
    call: &'static str,
}

impl<'a, 'py> Options<'a, 'py> {
    fn new(dict: &'a Bound<'py, PyDict>, call: &'static str, known: &[&str]) -> PyResult<Self> {
        refuse_unknown(dict, call, known)?;
        Ok(Self { dict, call })
    }

    /// A value the call requires.
    fn get<T: FromPyObjectOwned<'py>>(&self, name: &str) -> PyResult<T> {
        let value = self.dict.get_item(name)?;
        let value = value.ok_or_else(|| bad(format!("{} options lack '{name}'", self.call)))?;
        value.extract::<T>().map_err(|e| bad(format!("{} option '{name}': {}", self.call, e.into())))
    }

    /// A value that may be left out (or None).
    fn optional<T: FromPyObjectOwned<'py>>(&self, name: &str) -> PyResult<Option<T>> {
        match self.dict.get_item(name)? {
            Some(value) if !value.is_none() => self.get(name).map(Some),
            _ => Ok(None),
        }
    }

    /// `key_range`: (lower, upper) of the first key column, each a pyarrow array of one
    /// value or None (unbounded).
    fn key_range(&self) -> PyResult<Option<KeyBounds>> {
        let Some(pair) = self.dict.get_item("key_range")?.filter(|r| !r.is_none()) else { return Ok(None) };
        let (lower, upper): (Bound<'py, PyAny>, Bound<'py, PyAny>) = pair
            .extract()
            .map_err(|_| bad(format!("{} option 'key_range' must be (lower, upper)", self.call)))?;
        let bound = |value: Bound<'py, PyAny>| -> PyResult<Option<ArrayRef>> {
            if value.is_none() {
                return Ok(None);
            }
            let array = make_array(ArrayData::from_pyarrow_bound(&value)?);
            match array.len() {
                1 => Ok(Some(array)),
                n => Err(bad(format!("{} option 'key_range': a bound holds one value, not {n}", self.call))),
            }
        };
        Ok(Some(KeyBounds { lower: bound(lower)?, upper: bound(upper)? }))
    }

    fn merge(&self) -> PyResult<Option<MergeFunction>> {
        self.dict.get_item("merge")?.filter(|m| !m.is_none()).map(|m| merge_function(&m)).transpose()
    }

    fn versions(&self) -> PyResult<VersionColumns> {
        Ok(VersionColumns {
            sequence: self.get("sequence")?,
            descending: self.get("descending")?,
            system_sequence: self.optional("system_sequence")?,
            row_kind: self.optional("row_kind")?,
        })
    }
}

/// `_native.merge`'s options, and the threads that decode Parquet files ahead.
pub(crate) fn merge_options(py: Python<'_>, dict: &Bound<'_, PyDict>) -> PyResult<(MergeOptions, usize)> {
    const KNOWN: &[&str] =
        &["key", "sequence", "descending", "row_kind", "merge", "algorithm", "batch_size", "threads"];
    let options = Options::new(dict, "merge", KNOWN)?;
    let algorithm: String = options.get("algorithm")?;
    let merge = MergeOptions {
        key: options.get("key")?,
        versions: options.versions()?,
        merge: options.merge()?.unwrap_or_default(),
        algorithm: algorithm.parse().map_err(|e| to_py_err(py, e))?,
        batch_size: options.get("batch_size")?,
        columns: None,
    };
    Ok((merge, options.get("threads")?))
}

/// `_native.sort`'s and `SortBuffer`'s options (see `merge_core.inputs.sort_options`).
pub(crate) fn sort_options(py: Python<'_>, dict: &Bound<'_, PyDict>) -> PyResult<SortOptions> {
    const KNOWN: &[&str] = &[
        "key",
        "sequence",
        "descending",
        "system_sequence",
        "row_kind",
        "merge",
        "memory_limit",
        "spill_dir",
        "spill_compression",
        "max_fan_in",
        "max_disk_size",
        "batch_size",
        "partial",
    ];
    let options = Options::new(dict, "sort", KNOWN)?;
    let compression: String = options.get("spill_compression")?;
    Ok(SortOptions {
        key: options.get("key")?,
        versions: options.versions()?,
        merge: options.merge()?,
        memory_limit: options.get("memory_limit")?,
        spill_dir: options.optional::<PathBuf>("spill_dir")?,
        compression: compression.parse().map_err(|e| to_py_err(py, e))?,
        max_fan_in: options.get("max_fan_in")?,
        max_disk_size: options.optional("max_disk_size")?,
        batch_size: options.get("batch_size")?,
        partial: options.optional("partial")?.unwrap_or(false),
    })
}

/// `_native.read_paimon`'s options, and the figures of the plan the stream reports beside
/// its own (`stats`).
pub(crate) fn read_options(dict: &Bound<'_, PyDict>) -> PyResult<(ReadOptions, Vec<(String, u64)>)> {
    const KNOWN: &[&str] = &[
        "key",
        "sequence",
        "descending",
        "merge",
        "batch_size",
        "columns",
        "threads",
        "stats",
        "key_range",
        "read_ahead",
        "lone_runs_as_stored",
    ];
    let options = Options::new(dict, "read_paimon", KNOWN)?;
    let read = ReadOptions {
        key_range: options.key_range()?,
        key: options.get("key")?,
        sequence: options.get("sequence")?,
        descending: options.get("descending")?,
        merge: options.merge()?.unwrap_or_default(),
        batch_size: options.get("batch_size")?,
        columns: options.optional("columns")?,
        threads: options.get("threads")?,
        cache: Some(LookupCache::global().clone()),
        read_ahead: options.optional("read_ahead")?,
        lone_runs_as_stored: options.optional("lone_runs_as_stored")?.unwrap_or(false),
    };
    Ok((read, options.optional("stats")?.unwrap_or_default()))
}
