//! The in-memory phase of a sort: the buffered batches put in (key, version) order and
//! folded key group by key group, streamed out as batches. Spilling writes this stream
//! to a file; a sort that never spilled returns it as its result.

use arrow_array::RecordBatch;
use arrow_row::Rows;
use arrow_schema::SchemaRef;

use crate::error::Result;
use crate::fold::builder::{OutputBuilder, OutputColumns};
use crate::fold::Folder;
use crate::keys::common_prefix_len;
use crate::runs::store::{BatchStore, RowRef};
use crate::runs::version::compare_versions;
use crate::runs::Layout;

/// Buffered batches (in the store, in arrival order) and their keys in row format
/// (`keys[i]` belongs to stored batch `i`).
pub(crate) struct Buffered {
    pub store: BatchStore,
    pub keys: Vec<Rows>,
}

/// A row to sort: 8 bytes of its key in row format, as a number, and where it is.
///
/// The row format's bytes compare like the keys, so comparing these numbers orders most
/// rows without touching their keys; only equal prefixes compare the rest. The 8 bytes
/// are taken after the longest prefix that every key of the buffer shares (at least the
/// first column's null marker, the same for all rows since keys hold no nulls), so keys
/// like `user-000…123` still sort by number. An int64 key fits whole.
#[derive(Clone, Copy)]
struct Entry {
    prefix: u64,
    row: RowRef,
}

fn prefix(row: &[u8], skip: usize) -> u64 {
    let tail = row.get(skip..).unwrap_or_default();
    let mut bytes = [0u8; 8];
    let n = tail.len().min(8);
    bytes[..n].copy_from_slice(&tail[..n]);
    u64::from_be_bytes(bytes)
}

/// Length of the longest prefix shared by every row of `keys`.
fn common_prefix(keys: &[Rows]) -> usize {
    let mut rows = keys.iter().flat_map(|k| k.iter());
    let Some(first) = rows.next() else { return 0 };
    let first = first.as_ref();
    rows.fold(first.len(), |common, row| common_prefix_len(&first[..common], row.as_ref()))
}

/// An iterator of sorted, folded batches over a [`Buffered`].
pub(crate) struct SortedBatches {
    buffered: Buffered,
    order: Vec<Entry>,
    next: usize,
    folder: Folder,
    builder: OutputBuilder,
    group: Vec<RowRef>,
    batch_size: usize,
    /// Bytes every key of the buffer starts with (see [`Entry`]).
    skip: usize,
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
        let skip = common_prefix(keys);
        let mut entries: Vec<Entry> = keys
            .iter()
            .enumerate()
            .flat_map(|(b, rows)| {
                rows.iter().enumerate().map(move |(r, row)| Entry {
                    prefix: prefix(row.as_ref(), skip),
                    row: RowRef { batch: b as u32, row: r as u32 },
                })
            })
            .collect();
        // Every key starts with the same `skip` bytes: compare what follows.
        let key = |r: RowRef| &keys[r.batch as usize].row(r.row as usize).data()[skip..];
        let by_key = |a: &Entry, b: &Entry| a.prefix.cmp(&b.prefix).then_with(|| key(a.row).cmp(key(b.row)));
        if !layout.has_sequence() {
            // A stable sort keeps arrival order, which is the version order.
            entries.sort_by(by_key);
        } else {
            let store = &buffered.store;
            entries.sort_unstable_by(|a, b| {
                by_key(a, b).then_with(|| compare_versions(store.version(a.row), store.version(b.row)))
            });
        }
        let order = entries;
        if folder.may_add_nulls() {
            buffered.store.add_null_row(&layout.schema);
        }
        let builder = OutputBuilder::new(OutputColumns::all(output_schema), folder.sinks(layout));
        Self { buffered, order, next: 0, folder, builder, group: Vec::new(), batch_size, skip }
    }

    fn same_key(&self, a: &Entry, b: &Entry) -> bool {
        let keys = &self.buffered.keys;
        let key = |r: RowRef| &keys[r.batch as usize].row(r.row as usize).data()[self.skip..];
        a.prefix == b.prefix && key(a.row) == key(b.row)
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        while self.builder.len() < self.batch_size && self.next < self.order.len() {
            let first = &self.order[self.next];
            let end = (self.next + 1..self.order.len())
                .find(|&i| !self.same_key(first, &self.order[i]))
                .unwrap_or(self.order.len());
            self.group.clear();
            self.group.extend(self.order[self.next..end].iter().map(|e| e.row));
            self.next = end;
            self.folder.fold(&self.group, &self.buffered.store, &mut self.builder)?;
        }
        let n = self.builder.len().min(self.batch_size);
        if n == 0 {
            return Ok(None);
        }
        let n = self.builder.rows_that_fit(n, &self.buffered.store);
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
