//! `collect`: the elements of every list, concatenated (each once with `distinct`); a
//! retract removes its elements.

use arrow_array::ArrayRef;

use super::{items_equal, Acc, AccError, Accumulator, Cx, Output, State};

/// List elements are compared whole (`items_equal` on the child array itself).
fn same(child: &ArrayRef) -> ArrayRef {
    child.clone()
}

pub(super) struct CollectAgg {
    pub(super) distinct: bool,
    pub(super) set_semantics: bool,
}

impl Accumulator for CollectAgg {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        let (acc, new) = (cx.items(&state.acc), cx.items(&input));
        if acc.is_none() && new.is_none() {
            state.acc = Acc::Null;
            return Ok(());
        }
        if (acc.is_none() || new.is_none()) && !self.distinct {
            if acc.is_none() {
                state.acc = input;
            }
            return Ok(());
        }
        let mut items: Vec<(u32, u32)> = Vec::new();
        let add_once = |items: &mut Vec<(u32, u32)>, item| {
            if !items.iter().any(|&have| items_equal(cx, have, item, same)) {
                items.push(item);
            }
        };
        for item in acc.into_iter().flatten() {
            match self.distinct && self.set_semantics {
                true => add_once(&mut items, item),
                false => items.push(item),
            }
        }
        for item in new.into_iter().flatten() {
            match self.distinct {
                true => add_once(&mut items, item),
                false => items.push(item),
            }
        }
        state.acc = Acc::Items(items);
        Ok(())
    }

    /// Each retracted element removes one equal element, the first.
    fn retracts(&self) -> bool {
        true
    }

    fn retract(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        let Some(mut items) = cx.items(&state.acc) else {
            state.acc = Acc::Null;
            return Ok(());
        };
        let retracted = cx.items(&input).unwrap_or_default();
        if retracted.is_empty() {
            return Ok(());
        }
        for gone in retracted {
            if let Some(at) = items.iter().position(|&have| items_equal(cx, have, gone, same)) {
                items.remove(at);
            }
        }
        state.acc = Acc::Items(items);
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Items
    }
}
