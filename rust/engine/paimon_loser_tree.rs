//! Paimon's loser tree (its `LoserTree`, behind `SortMergeReaderWithLoserTree`), which
//! merges runs key group by key group.
//!
//! The tree is a flat `Vec` of run indices. `nodes[0]` holds the overall winner; each
//! internal node `n` in `1..k` holds the run that lost the match played there; run `i`
//! enters the tree at node `(i + k) / 2`. For k = 5:
//!
//! ```text
//!               nodes[0]   the overall winner
//!                  |
//!               nodes[1]
//!              /        \
//!         nodes[2]      nodes[3]
//!         /     \       /     \
//!    nodes[4]  run 0  run 1  run 2
//!     /    \
//!  run 3  run 4
//! ```
//!
//! A plain loser tree would advance the winning run right away. Here every version of
//! a key must be popped before any run moves on (so a group is complete when it is
//! folded), so a popped run stays in the tree in a *popped* state, sorting after every
//! unpopped row of its key. Each run carries one of six states, so that matches whose
//! outcome is already known skip the key comparison:
//!
//! | state            | meaning                                                        |
//! |------------------|----------------------------------------------------------------|
//! | `WinnerNewKey`   | climbing with a key not yet compared against the current group |
//! | `WinnerSameKey`  | climbing with the current group's key (a later version)        |
//! | `WinnerPopped`   | climbing after being popped                                    |
//! | `LoserNewKey`    | parked; its key differs from that of the run that beat it      |
//! | `LoserSameKey`   | parked; same key as the run that beat it, not yet popped       |
//! | `LoserPopped`    | parked; popped in the current group                            |
//!
//! `first_same_key` records the lowest node at which a climbing run beat a run with the
//! same key. When that run is popped, the search for the next version of the key jumps
//! straight to that node instead of replaying the matches below it, and when it is
//! `None` the group is known to be complete without any comparison: the run beat no run
//! of its key on its way up, so no other run holds the key.
//!
//! As in Paimon's code, a `WinnerSameKey` run that beats a `LoserSameKey` run records
//! that node too, or the beaten run could be missed after the winner is popped.

use std::cmp::Ordering;

use super::MergeEngine;
use crate::error::{MergeError, Result};
use crate::keys::KeyEncoder;
use crate::runs::{Group, Runs};

/// An internal node nobody has reached yet (only while the tree is being built).
const EMPTY: usize = usize::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    WinnerNewKey,
    WinnerSameKey,
    WinnerPopped,
    LoserNewKey,
    LoserSameKey,
    LoserPopped,
}

impl State {
    fn is_winner(self) -> bool {
        matches!(self, Self::WinnerNewKey | Self::WinnerSameKey | Self::WinnerPopped)
    }
}

#[derive(Debug, Clone, Copy)]
struct Leaf {
    state: State,
    first_same_key: Option<usize>,
}

impl Leaf {
    const NEW_KEY: Self = Self { state: State::WinnerNewKey, first_same_key: None };

    /// Remembers `node` unless a lower node is already remembered.
    fn saw_same_key_at(&mut self, node: usize) {
        self.first_same_key.get_or_insert(node);
    }
}

#[derive(Default)]
pub(crate) struct PaimonLoserTree {
    nodes: Vec<usize>,
    leaves: Vec<Leaf>,
    started: bool,
}

impl PaimonLoserTree {
    fn build<E: KeyEncoder>(&mut self, runs: &mut Runs<E>) -> Result<()> {
        let k = runs.len();
        self.nodes = vec![EMPTY; k];
        self.leaves = vec![Leaf::NEW_KEY; k];
        for run in (0..k).rev() {
            runs.start(run)?;
            self.adjust(runs, run)?;
        }
        Ok(())
    }

    /// Advances every run popped in the last group and lets it climb again.
    fn advance_popped<E: KeyEncoder>(&mut self, runs: &mut Runs<E>) -> Result<()> {
        while self.leaves[self.nodes[0]].state == State::WinnerPopped {
            let run = self.nodes[0];
            runs.advance(run)?;
            self.leaves[run] = Leaf::NEW_KEY;
            self.adjust(runs, run)?;
        }
        Ok(())
    }

    /// Lets `run` climb from its leaf towards the root, playing the match at each node.
    fn adjust<E: KeyEncoder>(&mut self, runs: &mut Runs<E>, run: usize) -> Result<()> {
        let k = self.leaves.len();
        let mut winner = run;
        let mut node = (run + k) / 2;
        while node > 0 {
            let parked = self.nodes[node];
            if parked == EMPTY {
                // Building: the first run to reach a node waits there for its opponent.
                self.leaves[winner].state = State::LoserNewKey;
                self.nodes[node] = winner;
                return Ok(());
            }
            match self.leaves[winner].state {
                State::WinnerNewKey => self.match_new_key(runs, node, winner, parked)?,
                State::WinnerSameKey => self.match_same_key(runs, node, winner, parked)?,
                State::WinnerPopped => match self.leaves[winner].first_same_key {
                    // No unpopped row of this key is left: the popped run stays on top.
                    None => break,
                    // Hand over to the lowest unpopped row of this key the run beat.
                    Some(slot) => {
                        node = slot;
                        let heir = self.nodes[slot];
                        if self.leaves[heir].state != State::LoserSameKey {
                            return Err(bug("a recorded same-key node no longer holds the key"));
                        }
                        self.leaves[winner].state = State::LoserPopped;
                        self.leaves[heir].state = State::WinnerSameKey;
                    }
                },
                _ => return Err(bug("a parked run climbed the tree")),
            }
            if !self.leaves[winner].state.is_winner() {
                std::mem::swap(&mut winner, &mut self.nodes[node]);
            }
            node /= 2;
        }
        self.nodes[0] = winner;
        Ok(())
    }

    /// A run with a key unseen in this group meets a parked run.
    fn match_new_key<E: KeyEncoder>(
        &mut self,
        runs: &mut Runs<E>,
        node: usize,
        child: usize,
        parent: usize,
    ) -> Result<()> {
        match self.leaves[parent].state {
            State::LoserNewKey => {
                match runs.compare_live(child, parent) {
                    Ordering::Less => {}
                    Ordering::Greater => {
                        self.set_roles(parent, State::WinnerNewKey, child, State::LoserNewKey)
                    }
                    Ordering::Equal => {
                        if runs.compare_versions(child, parent) == Ordering::Less {
                            self.leaves[parent].state = State::LoserSameKey;
                            self.leaves[child].saw_same_key_at(node);
                        } else {
                            self.set_roles(parent, State::WinnerNewKey, child, State::LoserSameKey);
                            self.leaves[parent].saw_same_key_at(node);
                        }
                    }
                }
                Ok(())
            }
            // The run popped in this group goes on up; the new key waits here.
            State::LoserPopped => {
                self.set_roles(parent, State::WinnerPopped, child, State::LoserNewKey);
                self.leaves[parent].first_same_key = None;
                Ok(())
            }
            // Impossible: a new key starts only once every row of the old one is popped.
            _ => Err(bug("a new key met an unpopped row of the previous key")),
        }
    }

    /// A later version of the current group's key meets a parked run.
    fn match_same_key<E: KeyEncoder>(
        &mut self,
        runs: &mut Runs<E>,
        node: usize,
        child: usize,
        parent: usize,
    ) -> Result<()> {
        match self.leaves[parent].state {
            // Same key: only the versions need comparing.
            State::LoserSameKey => {
                if runs.compare_versions(parent, child) == Ordering::Less {
                    self.set_roles(parent, State::WinnerSameKey, child, State::LoserSameKey);
                    self.leaves[parent].saw_same_key_at(node);
                } else {
                    self.leaves[child].saw_same_key_at(node);
                }
                Ok(())
            }
            // A larger key, or a row already popped: the child wins without a comparison.
            State::LoserNewKey | State::LoserPopped => Ok(()),
            _ => Err(bug("a climbing run met another climbing run")),
        }
    }

    fn set_roles(&mut self, winner: usize, winner_state: State, loser: usize, loser_state: State) {
        self.leaves[winner].state = winner_state;
        self.leaves[loser].state = loser_state;
    }
}

fn bug(what: &str) -> MergeError {
    MergeError::Internal(format!("loser tree: {what}"))
}

impl<E: KeyEncoder> MergeEngine<E> for PaimonLoserTree {
    fn next_group(&mut self, runs: &mut Runs<E>, group: &mut Group) -> Result<bool> {
        if runs.len() == 0 {
            return Ok(false);
        }
        if self.started {
            self.advance_popped(runs)?;
        } else {
            self.build(runs)?;
            self.started = true;
        }
        if runs.is_done(self.nodes[0]) {
            return Ok(false);
        }
        while self.leaves[self.nodes[0]].state != State::WinnerPopped {
            let top = self.nodes[0];
            runs.take(top, group)?;
            self.leaves[top].state = State::WinnerPopped;
            self.adjust(runs, top)?;
        }
        runs.finish_group(group);
        Ok(true)
    }
}
