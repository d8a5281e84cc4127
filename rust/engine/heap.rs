//! The binary-heap baseline: a min-heap of runs ordered by (key, version). A group is
//! the heap's minimum and every run popped after it with an equal key; the popped runs
//! advance and go back on the heap when the next group is asked for.

use std::cmp::Ordering;

use super::MergeEngine;
use crate::error::Result;
use crate::keys::KeyEncoder;
use crate::runs::{Group, Runs};

#[derive(Default)]
pub(crate) struct Heap {
    /// Run indices; `heap[0]` has the smallest (key, version).
    heap: Vec<usize>,
    /// Runs taken by the last group, to advance before the next one.
    popped: Vec<usize>,
    started: bool,
}

impl Heap {
    #[inline]
    fn less<E: KeyEncoder>(runs: &mut Runs<E>, a: usize, b: usize) -> bool {
        match runs.compare_keys(a, b) {
            Ordering::Equal => runs.compare_versions(a, b) == Ordering::Less,
            order => order == Ordering::Less,
        }
    }

    fn push<E: KeyEncoder>(&mut self, runs: &mut Runs<E>, run: usize) {
        let mut child = self.heap.len();
        self.heap.push(run);
        while child > 0 {
            let parent = (child - 1) / 2;
            if !Self::less(runs, self.heap[child], self.heap[parent]) {
                break;
            }
            self.heap.swap(child, parent);
            child = parent;
        }
    }

    fn pop<E: KeyEncoder>(&mut self, runs: &mut Runs<E>) -> usize {
        let top = self.heap.swap_remove(0);
        let len = self.heap.len();
        let mut parent = 0;
        loop {
            let left = 2 * parent + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let smaller =
                if right < len && Self::less(runs, self.heap[right], self.heap[left]) { right } else { left };
            if !Self::less(runs, self.heap[smaller], self.heap[parent]) {
                break;
            }
            self.heap.swap(parent, smaller);
            parent = smaller;
        }
        top
    }
}

impl<E: KeyEncoder> MergeEngine<E> for Heap {
    fn next_group(&mut self, runs: &mut Runs<E>, group: &mut Group) -> Result<bool> {
        if !self.started {
            self.started = true;
            for run in 0..runs.len() {
                runs.start(run)?;
                self.popped.push(run);
            }
        } else {
            for &run in &self.popped {
                runs.advance(run)?;
            }
        }
        // Taken out and put back so that its allocation is reused.
        let mut popped = std::mem::take(&mut self.popped);
        for run in popped.drain(..) {
            if !runs.is_done(run) {
                self.push(runs, run);
            }
        }
        self.popped = popped;
        if self.heap.is_empty() {
            return Ok(false);
        }
        let first = self.pop(runs);
        runs.take(first, group)?;
        self.popped.push(first);
        while let Some(&next) = self.heap.first() {
            if runs.compare_keys(next, first) != Ordering::Equal {
                break;
            }
            let next = self.pop(runs);
            runs.take(next, group)?;
            self.popped.push(next);
        }
        runs.finish_group(group);
        Ok(true)
    }
}
