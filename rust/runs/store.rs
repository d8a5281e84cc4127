//! The batches a merge holds on to: those the cursors stand in, and those that rows of
//! the output under construction point into. Rows are referenced by [`RowRef`], whose
//! batch id stays the same for as long as the batch is stored: the builder gathers
//! output columns from here with `interleave` (a batch's id is its position in the
//! list handed over), then [`BatchStore::release`] drops every batch nobody marked as
//! still needed, and a later batch reuses the freed id.

use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema, SchemaRef};

use super::value::{ColumnView, Value};
use super::version::{BatchVersions, RowKind, Version};

/// A row of a stored batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RowRef {
    pub batch: u32,
    pub row: u32,
}

/// An input batch with its version columns and its place in its run.
pub(crate) struct StoredBatch {
    pub batch: RecordBatch,
    pub versions: BatchVersions,
    pub run: usize,
    /// Position of the batch's first row in its run.
    pub first_row: u64,
    /// Views of the columns the merge function reads, in [`Layout::view_columns`] order.
    ///
    /// [`Layout::view_columns`]: super::cursor::Layout
    pub views: Vec<ColumnView>,
}

#[derive(Default)]
pub(crate) struct BatchStore {
    /// Slot `id` holds batch `id`, or nothing once it was released.
    slots: Vec<Option<StoredBatch>>,
    /// Released ids, reused before the list grows.
    free: Vec<u32>,
    /// A one-row batch of nulls, for folds whose result is null (see [`Self::null_row`]).
    null_row: Option<RowRef>,
}

impl BatchStore {
    /// The row of nulls added by [`Self::add_null_row`].
    pub(crate) fn null_row(&self) -> RowRef {
        self.null_row.expect("folds that produce nulls add the null row first")
    }

    /// Adds a row whose every column is null; gathering it gives a null. It stays stored
    /// for the life of the merge.
    pub(crate) fn add_null_row(&mut self, schema: &SchemaRef) {
        let nullable: Vec<Field> =
            schema.fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect();
        let columns = schema.fields().iter().map(|f| new_null_array(f.data_type(), 1)).collect();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(nullable)), columns)
            .expect("an all-null batch of nullable fields is valid");
        let id = self.push(StoredBatch {
            batch,
            versions: BatchVersions::default(),
            run: usize::MAX,
            first_row: 0,
            views: Vec::new(),
        });
        self.null_row = Some(RowRef { batch: id, row: 0 });
    }

    /// Marks the null row live, so [`Self::release`] keeps it.
    pub(crate) fn mark_live(&self, live: &mut [bool]) {
        if let Some(row) = self.null_row {
            live[row.batch as usize] = true;
        }
    }

    pub(crate) fn push(&mut self, batch: StoredBatch) -> u32 {
        match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = Some(batch);
                id
            }
            None => {
                self.slots.push(Some(batch));
                (self.slots.len() - 1) as u32
            }
        }
    }

    #[inline(always)]
    pub(crate) fn get(&self, id: u32) -> &StoredBatch {
        self.slot(id).expect("rows point into stored batches only")
    }

    /// Batch `id`, or `None` if that id is free.
    #[inline(always)]
    pub(crate) fn slot(&self, id: u32) -> Option<&StoredBatch> {
        self.slots[id as usize].as_ref()
    }

    /// The stored batches.
    pub(crate) fn batches(&self) -> impl Iterator<Item = &StoredBatch> {
        self.slots.iter().flatten()
    }

    /// Column `column` of every slot, by id, for `interleave`: a released slot gets
    /// another batch's column, never read (no row points there).
    pub(crate) fn columns(&self, column: usize) -> Vec<&ArrayRef> {
        let Some(any) = self.batches().next() else { return Vec::new() };
        let filler = any.batch.column(column);
        self.slots.iter().map(|slot| slot.as_ref().map_or(filler, |b| b.batch.column(column))).collect()
    }

    /// Whether the value of `r` in viewed column `slot` is null (the null row is null everywhere).
    #[inline(always)]
    pub(crate) fn is_null(&self, r: RowRef, slot: usize) -> bool {
        self.get(r.batch).views.get(slot).is_none_or(|v| v.is_null(r.row as usize))
    }

    /// The view of column `slot` of `r`'s batch.
    #[inline(always)]
    pub(crate) fn view(&self, r: RowRef, slot: usize) -> &ColumnView {
        &self.get(r.batch).views[slot]
    }

    /// The value of `r` in viewed column `slot` (`None` for a null).
    #[inline(always)]
    pub(crate) fn value(&self, r: RowRef, slot: usize) -> Option<Value<'_>> {
        self.get(r.batch).views.get(slot).and_then(|v| v.get(r.row as usize))
    }

    pub(crate) fn kind(&self, r: RowRef) -> RowKind {
        self.get(r.batch).versions.kind(r.row as usize)
    }

    /// Whether `r` is a retract (`-U` or `-D`).
    pub(crate) fn is_retract(&self, r: RowRef) -> bool {
        self.get(r.batch).versions.is_retract(r.row as usize)
    }

    pub(crate) fn version(&self, r: RowRef) -> Version<'_> {
        let stored = self.get(r.batch);
        Version {
            versions: &stored.versions,
            row: r.row as usize,
            run: stored.run,
            position: stored.first_row + u64::from(r.row),
        }
    }

    /// Releases every stored batch that `live` (by id, as long as [`Self::len`]) does not
    /// mark; their ids are reused. Ids of the kept batches do not change.
    pub(crate) fn release(&mut self, live: &[bool]) {
        for (id, slot) in self.slots.iter_mut().enumerate() {
            if !live[id] && slot.take().is_some() {
                self.free.push(id as u32);
            }
        }
    }

    /// The number of batches stored.
    pub(crate) fn stored(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// The number of ids in use or free (ids are below it).
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }
}
