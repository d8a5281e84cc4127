//! `last_value` and `last_non_null_value`: the newest value, or the newest non-null one.

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
