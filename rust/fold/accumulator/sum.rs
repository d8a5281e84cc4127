//! `sum`: the sum of the non-null values; a retract subtracts.

use super::number::Number;
use super::{null_or_other, Acc, AccError, Accumulator, Cx, Output, State};
use crate::runs::value::Value;

pub(super) struct SumAgg(pub(super) Number);

impl SumAgg {
    fn combine(&self, a: Value, b: Value, subtract: bool) -> Result<Acc, AccError> {
        match (a, b) {
            (Value::Int(a), Value::Int(b)) => {
                self.0.int(if subtract { a.checked_sub(b) } else { a.checked_add(b) })
            }
            (Value::Float(a), Value::Float(b)) => Ok(self.0.float(if subtract { a - b } else { a + b })),
            _ => unreachable!("a sum column holds numbers of one kind"),
        }
    }
}

impl Accumulator for SumAgg {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        state.acc = match null_or_other(&state.acc, &input, cx) {
            Some(either) => either,
            None => self.combine(cx.value(&state.acc).unwrap(), cx.value(&input).unwrap(), false)?,
        };
        Ok(())
    }

    fn retracts(&self) -> bool {
        true
    }

    fn retract(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        if cx.is_null(&input) {
            return Ok(());
        }
        state.acc = match cx.value(&state.acc) {
            None => match cx.value(&input).unwrap() {
                Value::Int(v) => self.0.int(v.checked_neg())?,
                Value::Float(v) => self.0.float(-v),
                _ => unreachable!("a sum column holds numbers"),
            },
            Some(acc) => self.combine(acc, cx.value(&input).unwrap(), true)?,
        };
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Compute
    }
}
