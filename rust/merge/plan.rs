//! A merge's options ([`MergeOptions`]), and what the merge decides from them and the
//! runs' schema before it reads a row ([`MergePlan`]): which column plays which role, how
//! the versions of a key fold, which columns are output and in what form. Computed once
//! and never changed; the merge then only reads.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::engine::Algorithm;
use crate::error::Result;
use crate::fold::builder::OutputColumns;
use crate::fold::{Folder, MergeFunction, Paths};
use crate::runs::version::VersionColumns;
use crate::runs::Layout;

/// Options of [`merge`](fn@crate::merge); see the Python `merge_core.merge` for their meaning.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// Key columns, compared column by column.
    pub key: Vec<String>,
    /// The columns ordering and classifying the versions of a key (none: a later run is
    /// newer and every row is an add).
    pub versions: VersionColumns,
    /// How the versions of a key are folded.
    pub merge: MergeFunction,
    /// Which engine merges.
    pub algorithm: Algorithm,
    /// Rows per output batch (the last may be shorter).
    pub batch_size: usize,
    /// The output columns, in this order (all when `None`). Columns left out are not
    /// built at all.
    pub columns: Option<Vec<String>>,
}

impl MergeOptions {
    /// Deduplicating merge on `key` with the loser tree and batches of 8192 rows.
    pub fn new(key: &[&str]) -> Self {
        Self {
            key: key.iter().map(|k| k.to_string()).collect(),
            versions: VersionColumns::default(),
            merge: MergeFunction::default(),
            algorithm: Algorithm::default(),
            batch_size: 8192,
            columns: None,
        }
    }
}

pub(crate) struct MergePlan {
    /// The columns' roles, with the columns the fold reads value by value.
    pub layout: Arc<Layout>,
    pub folder: Folder,
    pub output: OutputColumns,
}

impl MergePlan {
    /// The plan of merging runs of `schema` as `options` say; `strict`: a run must hold
    /// each key once. `paths` picks the folds' shortcuts (tests turn them off).
    pub(crate) fn new(schema: SchemaRef, options: &MergeOptions, strict: bool, paths: Paths) -> Result<Self> {
        let mut layout = Layout::new(schema, &options.key, &options.versions, strict)?;
        let folder = Folder::with_paths(options.merge.clone(), &layout, paths)?;
        layout.view_columns = folder.view_columns();
        let output = OutputColumns::select(output_schema(&layout, &folder), options.columns.as_deref())?;
        Ok(Self { layout: Arc::new(layout), folder, output })
    }

    /// The types of the key columns, in key order.
    pub(crate) fn key_types(&self) -> Vec<DataType> {
        let schema = &self.layout.schema;
        self.layout.key.iter().map(|&k| schema.field(k).data_type().clone()).collect()
    }
}

/// The runs' schema, with every column a fold may set to null made nullable.
pub(crate) fn output_schema(layout: &Layout, folder: &Folder) -> SchemaRef {
    if !folder.may_add_nulls() {
        return layout.schema.clone();
    }
    let fields: Vec<Field> = (layout.schema.fields().iter().enumerate())
        .map(|(i, f)| {
            let field = f.as_ref().clone();
            if layout.key.contains(&i) || layout.row_kind == Some(i) {
                field
            } else {
                field.with_nullable(true)
            }
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, layout.schema.metadata().clone()))
}
