//! A plain loser tree, the default engine. A popped run advances at once and climbs
//! again: one replay of its path per row and no per-run state, where Paimon's tree
//! ([`super::PaimonLoserTree`]) parks popped runs in the tree until the group is complete.
//! A group is then "every winner whose key equals the first one's": the next winner
//! is compared with the row the first run took, which stays readable after its run
//! moved on (its batch's keys are kept until the run moves again), and for most keys
//! the two digests differ, settling it with one integer compare.
//!
//! Runs are ordered by (key, version), a used-up run after every live one, so the rows
//! of a key leave the tree in version order; all of them are heads when the key is the
//! least (each run's head is its least unread row), and a run that moved on holds a
//! greater key.

use super::MergeEngine;
use crate::error::Result;
use crate::keys::KeyEncoder;
use crate::runs::{Group, Runs};

/// An internal node nobody has reached yet (only while the tree is being built).
const EMPTY: usize = usize::MAX;

#[derive(Default)]
pub(crate) struct LoserTree {
    /// `nodes[0]`: the winner; `nodes[n]` for `n` in `1..k`: the loser of the match there.
    nodes: Vec<usize>,
    /// The digest of each node's run, read beside it: most matches are settled by the
    /// two digests, one in the node and the climbing run's in a register.
    digests: Vec<u64>,
    started: bool,
}

impl LoserTree {
    /// Lets `run` climb from its leaf, playing the match at each node.
    #[inline]
    fn replay<E: KeyEncoder>(&mut self, runs: &mut Runs<E>, run: usize) {
        let k = runs.len();
        let (mut winner, mut digest) = (run, runs.digest(run));
        let mut node = (run + k) / 2;
        while node > 0 {
            let parked = self.nodes[node];
            if parked == EMPTY {
                // building: wait here for the opponent
                (self.nodes[node], self.digests[node]) = (winner, digest);
                break;
            }
            let parked_digest = self.digests[node];
            if runs.goes_before(parked, parked_digest, winner, digest) {
                (self.nodes[node], self.digests[node]) = (winner, digest);
                (winner, digest) = (parked, parked_digest);
            }
            node /= 2;
        }
        if node == 0 {
            self.nodes[0] = winner;
        }
    }

    /// Takes the winner's row (and the rows of its key in the same run) into `group`,
    /// then moves the run on and lets it climb again.
    fn pop<E: KeyEncoder>(&mut self, runs: &mut Runs<E>, group: &mut Group) -> Result<()> {
        let top = self.nodes[0];
        runs.take(top, group)?;
        runs.advance(top)?;
        self.replay(runs, top);
        Ok(())
    }
}

impl<E: KeyEncoder> MergeEngine<E> for LoserTree {
    fn next_group(&mut self, runs: &mut Runs<E>, group: &mut Group) -> Result<bool> {
        if runs.len() == 0 {
            return Ok(false);
        }
        if !self.started {
            self.started = true;
            self.nodes = vec![EMPTY; runs.len()];
            self.digests = vec![0; runs.len()];
            for run in (0..runs.len()).rev() {
                runs.start(run)?;
                self.replay(runs, run);
            }
        }
        if runs.is_done(self.nodes[0]) {
            return Ok(false);
        }
        let (first, digest) = (self.nodes[0], runs.digest(self.nodes[0]));
        self.pop(runs, group)?;
        while !runs.is_done(self.nodes[0]) && runs.same_key_as_taken(self.nodes[0], first, digest) {
            self.pop(runs, group)?;
        }
        runs.finish_group(group);
        Ok(true)
    }
}
