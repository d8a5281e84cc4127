//! `merge_map`: the entries of every map, a newer value replacing an older one of an
//! equal key; a retract removes its keys.

use arrow_array::cast::AsArray;
use arrow_array::ArrayRef;

use super::{items_equal, Acc, AccError, Accumulator, Cx, Output, State};

/// The key column of map entries.
fn map_keys(entries: &ArrayRef) -> ArrayRef {
    entries.as_struct().column(0).clone()
}

pub(super) struct MergeMapAgg;

impl Accumulator for MergeMapAgg {
    /// The union of the entries, a later entry replacing an earlier one of an equal key
    /// in its place (Paimon's hash map leaves the order unspecified).
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        let (Some(acc), Some(new)) = (cx.items(&state.acc), cx.items(&input)) else {
            if cx.is_null(&state.acc) {
                state.acc = input;
            }
            return Ok(());
        };
        let mut entries: Vec<(u32, u32)> = Vec::new();
        for entry in acc.into_iter().chain(new) {
            match entries.iter().position(|&have| items_equal(cx, have, entry, map_keys)) {
                Some(at) => entries[at] = entry,
                None => entries.push(entry),
            }
        }
        state.acc = Acc::Items(entries);
        Ok(())
    }

    /// Removes every entry whose key the retracted map holds.
    fn retracts(&self) -> bool {
        true
    }

    fn retract(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        let Some(acc) = cx.items(&state.acc) else {
            state.acc = Acc::Null;
            return Ok(());
        };
        let retracted = cx.items(&input).unwrap_or_default();
        if retracted.is_empty() {
            return Ok(());
        }
        let mut entries: Vec<(u32, u32)> = Vec::new();
        for entry in acc {
            if retracted.iter().any(|&gone| items_equal(cx, gone, entry, map_keys)) {
                continue;
            }
            match entries.iter().position(|&have| items_equal(cx, have, entry, map_keys)) {
                Some(at) => entries[at] = entry,
                None => entries.push(entry),
            }
        }
        state.acc = Acc::Items(entries);
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Items
    }
}
