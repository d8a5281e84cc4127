//! `last_value` and `last_non_null_value`: the newest value, or the newest non-null one;
//! `primary-key`: the value of the version folded in last, retracts included.

use super::{Acc, AccError, Accumulator, Cx, Output, State};

pub(super) struct LastValueAgg;

impl Accumulator for LastValueAgg {
    fn agg(&self, state: &mut State, input: Acc, _cx: &Cx) -> Result<(), AccError> {
        state.acc = input;
        Ok(())
    }

    fn retracts(&self) -> bool {
        true
    }

    fn retract(&self, state: &mut State, _input: Acc, _cx: &Cx) -> Result<(), AccError> {
        state.acc = Acc::Null;
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Pick
    }
}

pub(super) struct LastNonNullAgg;

impl Accumulator for LastNonNullAgg {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        if !cx.is_null(&input) {
            state.acc = input;
        }
        Ok(())
    }

    fn retracts(&self) -> bool {
        true
    }

    fn retract(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        if !cx.is_null(&input) {
            state.acc = Acc::Null;
        }
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Pick
    }
}

/// Paimon gives each primary-key column the fold sees as a value (a partition column of
/// the key: the merge keys on the rest) this function: every version, added or
/// retracted, carries the key's own value, so a retract never nulls it.
pub(super) struct PrimaryKeyAgg;

impl Accumulator for PrimaryKeyAgg {
    fn agg(&self, state: &mut State, input: Acc, _cx: &Cx) -> Result<(), AccError> {
        state.acc = input;
        Ok(())
    }

    fn retracts(&self) -> bool {
        true
    }

    fn retract(&self, state: &mut State, input: Acc, _cx: &Cx) -> Result<(), AccError> {
        state.acc = input;
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Pick
    }
}
