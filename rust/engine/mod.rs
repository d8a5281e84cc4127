//! The k-way merge engines. All three turn the runs into a sequence of key groups (all rows
//! of one key, in version order) and count their key comparisons; they differ only in
//! how they find the next smallest key:
//!
//! - [`LoserTree`]: a plain loser tree, the default, which plays byte keys on
//!   offset-value codes;
//! - [`PaimonLoserTree`]: Paimon's loser tree with its same-key state machine;
//! - [`Heap`]: the binary-heap baseline (Paimon's `SortMergeReaderWithMinHeap`).
//!
//! Every group is complete before it is folded, so a merge function sees each key
//! exactly once.

mod heap;
mod loser_tree;
mod paimon_loser_tree;

pub(crate) use heap::Heap;
pub(crate) use loser_tree::LoserTree;
pub(crate) use paimon_loser_tree::PaimonLoserTree;

use crate::error::Result;
use crate::keys::KeyEncoder;
use crate::runs::{Group, Runs};

/// Which engine merges the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// A plain loser tree (the default), which needs none of the per-run states of
    /// Paimon's: a popped run moves on at once.
    #[default]
    LoserTree,
    /// Paimon's loser tree (`"paimon-loser-tree"`), to compare the two.
    PaimonLoserTree,
    /// A binary min-heap, the baseline.
    Heap,
}

impl std::str::FromStr for Algorithm {
    type Err = crate::error::MergeError;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "loser-tree" | "loser_tree" | "losertree" => Ok(Self::LoserTree),
            "heap" => Ok(Self::Heap),
            "paimon-loser-tree" => Ok(Self::PaimonLoserTree),
            other => {
                Err(crate::error::invalid!("unknown algorithm '{other}' (expected 'loser-tree' or 'heap')"))
            }
        }
    }
}

/// A k-way merge over the runs of a [`Runs`].
pub(crate) trait MergeEngine<E: KeyEncoder>: Send {
    /// Fills `group` (empty on entry) with every row of the next smallest key, in version
    /// order. Returns `false` once all runs are used up.
    fn next_group(&mut self, runs: &mut Runs<E>, group: &mut Group) -> Result<bool>;
}
