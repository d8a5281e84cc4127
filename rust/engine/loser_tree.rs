//! A plain loser tree, the default engine. A popped run advances at once and climbs
//! again: one replay of its path per row and no per-run state, where Paimon's tree
//! ([`super::PaimonLoserTree`]) parks popped runs in the tree until the group is complete.
//! A group is then "every winner whose key equals the first one's".
//!
//! Each node keeps an integer beside its run that settles most matches alone
//! ([`Runs::match_key`]). For primitive keys it is the key's digest, and the next winner
//! continues the group if its key equals the row the first run took, which stays
//! readable after its run moved on (its batch's keys are kept until the run moves
//! again): the two digests differ for most keys. For byte keys (strings, binaries,
//! composite keys in arrow's row format) it is an offset-value code (see
//! [`crate::keys::ovc`]): each loser's code is against the run that beat it, so the runs
//! on the path a popped run climbs again all hold codes against the row it just gave,
//! and so does the popped run's next row, whose code against its run's previous row was
//! found when its batch was checked. Unequal codes then order two keys whatever their
//! shared head (and the loser's code stays as it is), a tie compares bytes only from
//! where the codes point, and a winner whose code says "equal to the row just taken"
//! continues the group without a comparison. A code tie reads both keys' bytes, though,
//! where a digest holding a short tail past the shared head settles every match alone:
//! when the runs' first batches have only such keys, the tree plays digests instead
//! ([`Runs::drop_codes_if_digests_settle`]).
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
    /// The match key of each node's run ([`Runs::match_key`]), read beside it: most
    /// matches are settled by two of them, one in the node and the climbing run's in a
    /// register. For byte keys, an offset-value code against the run that beat it (the
    /// winner's, in `keys[0]`, against the row taken last); else a digest.
    keys: Vec<u64>,
    started: bool,
}

impl LoserTree {
    /// Lets `run` climb from its leaf, playing the match at each node.
    #[inline]
    fn replay<E: KeyEncoder>(&mut self, runs: &mut Runs<E>, run: usize) {
        let k = runs.len();
        let (mut winner, mut key) = (run, runs.match_key(run));
        let mut node = (run + k) / 2;
        while node > 0 {
            let parked = self.nodes[node];
            if parked == EMPTY {
                // building: wait here for the opponent
                (self.nodes[node], self.keys[node]) = (winner, key);
                break;
            }
            let parked_key = self.keys[node];
            let (parked_first, loser_key) = runs.play(parked, parked_key, winner, key);
            if parked_first {
                (self.nodes[node], self.keys[node]) = (winner, loser_key);
                (winner, key) = (parked, parked_key);
            } else {
                self.keys[node] = loser_key;
            }
            node /= 2;
        }
        if node == 0 {
            (self.nodes[0], self.keys[0]) = (winner, key);
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
            self.keys = vec![0; runs.len()];
            if Runs::<E>::CODED {
                runs.keep_codes();
            }
            for run in (0..runs.len()).rev() {
                runs.start(run)?;
            }
            runs.drop_codes_if_digests_settle();
            for run in (0..runs.len()).rev() {
                self.replay(runs, run);
            }
        }
        if runs.is_done(self.nodes[0]) {
            return Ok(false);
        }
        let (first, digest) = (self.nodes[0], runs.digest(self.nodes[0]));
        self.pop(runs, group)?;
        while !runs.is_done(self.nodes[0]) && runs.continues_group(self.nodes[0], self.keys[0], first, digest)
        {
            self.pop(runs, group)?;
        }
        runs.finish_group(group);
        Ok(true)
    }
}
