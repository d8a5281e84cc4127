//! `first_value` and `first_non_null_value`: the oldest value, or the oldest non-null
//! one (taken once per key: Paimon's `initialized` flag).

use super::{Acc, AccError, Accumulator, Cx, Output, State};

pub(super) struct FirstValueAgg;

impl Accumulator for FirstValueAgg {
    fn agg(&self, state: &mut State, input: Acc, _cx: &Cx) -> Result<(), AccError> {
        if !state.initialized {
            state.initialized = true;
            state.acc = input;
        }
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Pick
    }
}

pub(super) struct FirstNonNullAgg;

impl Accumulator for FirstNonNullAgg {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        if !state.initialized && !cx.is_null(&input) {
            state.initialized = true;
            state.acc = input;
        }
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Pick
    }
}
