//! `bool_and` and `bool_or`: the logical and, or or, of the non-null booleans.

use super::{null_or_other, Acc, AccError, Accumulator, Cx, Output, State};
use crate::runs::value::Value;

pub(super) struct BoolAgg {
    pub(super) and: bool,
}

impl Accumulator for BoolAgg {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        state.acc = match null_or_other(&state.acc, &input, cx) {
            Some(either) => either,
            None => match (cx.value(&state.acc).unwrap(), cx.value(&input).unwrap()) {
                (Value::Bool(a), Value::Bool(b)) => Acc::Bool(if self.and { a && b } else { a || b }),
                _ => unreachable!("a boolean column holds booleans"),
            },
        };
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Compute
    }
}
