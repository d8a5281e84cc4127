//! `min` and `max`: the smallest or largest non-null value, in Java's order of values.

use std::cmp::Ordering;

use super::{null_or_other, Acc, AccError, Accumulator, Cx, Output, State};
use crate::runs::value::Value;

/// Java's order of values for min and max (`Float.compare` for floats: `-0.0 < 0.0`,
/// every NaN above everything and equal to each other).
pub(crate) fn java_compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Float(a), Value::Float(b)) => match (a.is_nan(), b.is_nan()) {
            (false, false) => a.total_cmp(b),
            (x, y) => x.cmp(&y),
        },
        _ => a.compare(b),
    }
}

/// min (`keep: Less`) and max (`keep: Greater`).
pub(super) struct Extreme {
    pub(super) keep: Ordering,
}

impl Accumulator for Extreme {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        if let Some(either) = null_or_other(&state.acc, &input, cx) {
            state.acc = either;
            return Ok(());
        }
        let order = java_compare(&cx.value(&state.acc).unwrap(), &cx.value(&input).unwrap());
        // On a tie min takes the input and max keeps the accumulator, as Paimon's do.
        let keep_acc = match self.keep {
            Ordering::Less => order == Ordering::Less,
            _ => order != Ordering::Less,
        };
        if !keep_acc {
            state.acc = input;
        }
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Pick
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_sorts_above_everything_for_min_and_max() {
        let (nan, neg_nan) = (Value::Float(f64::NAN), Value::Float(-f64::NAN));
        assert_eq!(java_compare(&nan, &Value::Float(f64::INFINITY)), Ordering::Greater);
        assert_eq!(java_compare(&neg_nan, &Value::Float(1.0)), Ordering::Greater);
        assert_eq!(java_compare(&nan, &neg_nan), Ordering::Equal);
        assert_eq!(java_compare(&Value::Float(-0.0), &Value::Float(0.0)), Ordering::Less);
    }
}
