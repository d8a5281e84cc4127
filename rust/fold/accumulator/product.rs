//! `product`: the product of the non-null values; a retract divides.

use super::number::{div_half_up, gcd, pow10, Number};
use super::{null_or_other, Acc, AccError, Accumulator, Cx, Output, State};
use crate::runs::value::Value;

pub(super) struct ProductAgg(pub(super) Number);

impl Accumulator for ProductAgg {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        state.acc = match null_or_other(&state.acc, &input, cx) {
            Some(either) => either,
            None => match (cx.value(&state.acc).unwrap(), cx.value(&input).unwrap()) {
                // Decimals: the exact product, rounded half up to the column's scale.
                (Value::Int(a), Value::Int(b)) => {
                    let exact = a.checked_mul(b);
                    self.0.int(exact.and_then(|p| div_half_up(p, pow10(self.0.scale()))))?
                }
                (Value::Float(a), Value::Float(b)) => self.0.float(a * b),
                _ => unreachable!("a product column holds numbers of one kind"),
            },
        };
        Ok(())
    }

    fn retracts(&self) -> bool {
        true
    }

    fn retract(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        if cx.is_null(&state.acc) || cx.is_null(&input) {
            return Ok(());
        }
        state.acc = match (cx.value(&state.acc).unwrap(), cx.value(&input).unwrap()) {
            (Value::Int(_), Value::Int(0)) => return Err(AccError::Division),
            // Integers: truncating division, as Java's.
            (Value::Int(a), Value::Int(b)) if !self.0.is_decimal() => self.0.int(a.checked_div(b))?,
            // Decimals: the exact quotient (an error if it does not terminate, as Java's
            // BigDecimal.divide), rounded half up to the column's scale.
            (Value::Int(a), Value::Int(b)) => {
                let mut rest = b.abs() / gcd(a, b);
                for p in [2, 5] {
                    while rest % p == 0 {
                        rest /= p;
                    }
                }
                if rest != 1 {
                    return Err(AccError::Division);
                }
                self.0.int(a.checked_mul(pow10(self.0.scale())).and_then(|n| div_half_up(n, b)))?
            }
            (Value::Float(a), Value::Float(b)) => self.0.float(a / b),
            _ => unreachable!("a product column holds numbers of one kind"),
        };
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Compute
    }
}
