//! The in-memory phase of a sort: the buffered batches put in (key, version) order and
//! folded key group by key group, streamed out as batches. Spilling writes this stream
//! to a file; a sort that never spilled returns it as its result.

use std::cmp::Ordering;

use arrow_array::RecordBatch;
use arrow_row::Rows;
use arrow_schema::SchemaRef;

use crate::builder::OutputBuilder;
use crate::error::Result;
use crate::fold::Folder;
use crate::run::Layout;
use crate::store::{BatchStore, RowRef};
use crate::version::compare_versions;

/// Buffered batches (in the store, in arrival order) and their keys in row format
/// (`keys[i]` belongs to stored batch `i`).
pub(crate) struct Buffered {
    pub store: BatchStore,
    pub keys: Vec<Rows>,
}

/// An iterator of sorted, folded batches over a [`Buffered`].
pub(crate) struct SortedBatches {
    buffered: Buffered,
    order: Vec<RowRef>,
    next: usize,
    folder: Folder,
    builder: OutputBuilder,
    group: Vec<RowRef>,
    batch_size: usize,
}

impl SortedBatches {
    /// Sorts the buffer. Rows of one key stay in version order: arrival order, or the
    /// sequence order when the layout has sequence columns.
    pub(crate) fn new(
        mut buffered: Buffered,
        layout: &Layout,
        folder: Folder,
        output_schema: SchemaRef,
        batch_size: usize,
    ) -> Self {
        let keys = &buffered.keys;
        let mut order: Vec<RowRef> = keys
            .iter()
            .enumerate()
            .flat_map(|(b, rows)| {
                (0..rows.num_rows()).map(move |r| RowRef { batch: b as u32, row: r as u32 })
            })
            .collect();
        let by_key = |a: &RowRef, b: &RowRef| {
            keys[a.batch as usize].row(a.row as usize).cmp(&keys[b.batch as usize].row(b.row as usize))
        };
        if layout.sequence.is_empty() {
            // A stable sort keeps arrival order, which is the version order.
            order.sort_by(by_key);
        } else {
            let store = &buffered.store;
            order.sort_unstable_by(|a, b| {
                by_key(a, b).then_with(|| compare_versions(store.version(*a), store.version(*b)))
            });
        }
        if folder.may_add_nulls() {
            buffered.store.add_null_row(&layout.schema);
        }
        let builder = OutputBuilder::new(output_schema, folder.sinks(layout));
        Self { buffered, order, next: 0, folder, builder, group: Vec::new(), batch_size }
    }

    fn same_key(&self, a: RowRef, b: RowRef) -> bool {
        let keys = &self.buffered.keys;
        keys[a.batch as usize].row(a.row as usize).cmp(&keys[b.batch as usize].row(b.row as usize))
            == Ordering::Equal
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        while self.builder.len() < self.batch_size && self.next < self.order.len() {
            let first = self.order[self.next];
            let end = (self.next + 1..self.order.len())
                .find(|&i| !self.same_key(first, self.order[i]))
                .unwrap_or(self.order.len());
            self.group.clear();
            self.group.extend_from_slice(&self.order[self.next..end]);
            self.next = end;
            self.folder.fold(&self.group, &self.buffered.store, &mut self.builder)?;
        }
        let n = self.builder.len().min(self.batch_size);
        if n == 0 {
            return Ok(None);
        }
        Ok(Some(self.builder.build(n, &self.buffered.store)?))
    }
}

impl Iterator for SortedBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let result = self.next_batch().transpose();
        if matches!(result, Some(Err(_))) {
            self.next = self.order.len();
        }
        result
    }
}
