//! Assembles output batches. The fold says which input row (and row kind) each output
//! row is; the builder gathers every column of a whole batch at once with arrow's
//! `interleave`, so no value is ever copied row by row.

use arrow_array::{Array, RecordBatch};
use arrow_schema::SchemaRef;
use arrow_select::interleave::interleave;

use crate::error::Result;
use crate::store::{BatchStore, RowRef};
use crate::version::{row_kind_array, RowKind};

pub(crate) struct OutputBuilder {
    schema: SchemaRef,
    row_kind: Option<usize>,
    rows: Vec<RowRef>,
    kinds: Vec<RowKind>,
}

impl OutputBuilder {
    pub(crate) fn new(schema: SchemaRef, row_kind: Option<usize>) -> Self {
        Self { schema, row_kind, rows: Vec::new(), kinds: Vec::new() }
    }

    /// Adds an output row copied from `row`, with row kind `kind`.
    #[inline]
    pub(crate) fn push(&mut self, row: RowRef, kind: RowKind) {
        self.rows.push(row);
        self.kinds.push(kind);
    }

    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Builds a batch of the first `n` pending rows.
    pub(crate) fn build(&mut self, n: usize, store: &BatchStore) -> Result<RecordBatch> {
        let indices: Vec<(usize, usize)> =
            self.rows.drain(..n).map(|r| (r.batch as usize, r.row as usize)).collect();
        let kinds: Vec<RowKind> = self.kinds.drain(..n).collect();
        let columns = (0..self.schema.fields().len())
            .map(|c| {
                if Some(c) == self.row_kind {
                    return Ok(row_kind_array(self.schema.field(c).data_type(), &kinds));
                }
                let arrays: Vec<&dyn Array> = store.batches().map(|b| b.column(c).as_ref()).collect();
                interleave(&arrays, &indices)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }

    /// Marks the stored batches that pending rows point into.
    pub(crate) fn mark_live(&self, live: &mut [bool]) {
        for r in &self.rows {
            live[r.batch as usize] = true;
        }
    }

    /// Renumbers pending rows after [`BatchStore::retain`].
    pub(crate) fn remap(&mut self, remap: &[u32]) {
        for r in &mut self.rows {
            r.batch = remap[r.batch as usize];
        }
    }
}
