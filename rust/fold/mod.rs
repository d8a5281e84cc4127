//! Merge functions: how the versions of one key fold into the output (Paimon's merge
//! engines). A fold receives a complete key group in version order and tells the
//! output builder which rows to emit.

use crate::builder::OutputBuilder;
use crate::store::{BatchStore, RowRef};
use crate::version::RowKind;

/// How the versions of a key are folded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeFunction {
    /// No folding: every row is kept, in (key, version) order.
    None,
    /// The newest version wins; a newest retract deletes the key.
    Deduplicate {
        /// Discard retracts before folding.
        ignore_delete: bool,
        /// Drop deleted keys (`true`) or keep them as one `-D` row.
        drop_deletes: bool,
    },
}

impl Default for MergeFunction {
    fn default() -> Self {
        Self::Deduplicate { ignore_delete: false, drop_deletes: true }
    }
}

impl MergeFunction {
    /// Whether a run must hold each key at most once.
    pub(crate) fn folds(&self) -> bool {
        !matches!(self, Self::None)
    }

    /// Folds one key group (in version order) into `out`.
    pub(crate) fn fold(&self, group: &[RowRef], store: &BatchStore, out: &mut OutputBuilder) {
        match *self {
            Self::None => group.iter().for_each(|&r| out.push(r, store.kind(r))),
            Self::Deduplicate { ignore_delete, drop_deletes } => {
                let newest = if ignore_delete {
                    group.iter().rev().find(|&&r| !store.kind(r).is_retract())
                } else {
                    group.last()
                };
                let Some(&newest) = newest else { return };
                if !store.kind(newest).is_retract() {
                    out.push(newest, RowKind::Insert);
                } else if !drop_deletes {
                    out.push(newest, RowKind::Delete);
                }
            }
        }
    }
}
