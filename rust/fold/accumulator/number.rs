//! The numbers of sum and product: a column's numeric type with its range and decimal
//! scale, and the integer arithmetic of decimals as Java's `BigDecimal` rounds it.

use arrow_schema::DataType;

use super::{Acc, AccError};

/// The numeric type of a sum or product column.
#[derive(Clone, Copy)]
pub(super) enum Number {
    /// Integers and decimals (unscaled), with the column's range and decimal scale.
    Int { min: i128, max: i128, scale: i8, decimal: bool },
    /// Floats; `single`: float32, whose arithmetic rounds to float32 at every step.
    Float { single: bool },
}

impl Number {
    pub(super) fn of(data_type: &DataType) -> Option<Self> {
        use DataType::*;
        let int = |min: i128, max: i128| Some(Self::Int { min, max, scale: 0, decimal: false });
        match data_type {
            Int8 => int(i8::MIN.into(), i8::MAX.into()),
            Int16 => int(i16::MIN.into(), i16::MAX.into()),
            Int32 => int(i32::MIN.into(), i32::MAX.into()),
            Int64 => int(i64::MIN.into(), i64::MAX.into()),
            UInt8 => int(0, u8::MAX.into()),
            UInt16 => int(0, u16::MAX.into()),
            UInt32 => int(0, u32::MAX.into()),
            UInt64 => int(0, u64::MAX.into()),
            Decimal128(p, s) => {
                let bound = 10i128.pow(u32::from(*p)) - 1;
                Some(Self::Int { min: -bound, max: bound, scale: *s, decimal: true })
            }
            Float32 => Some(Self::Float { single: true }),
            Float64 => Some(Self::Float { single: false }),
            _ => None,
        }
    }

    pub(super) fn int(self, v: Option<i128>) -> Result<Acc, AccError> {
        match (self, v) {
            (Self::Int { min, max, .. }, Some(v)) if (min..=max).contains(&v) => Ok(Acc::Int(v)),
            _ => Err(AccError::Overflow),
        }
    }

    pub(super) fn float(self, v: f64) -> Acc {
        match self {
            Self::Float { single: true } => Acc::Float(v as f32 as f64),
            _ => Acc::Float(v),
        }
    }

    pub(super) fn scale(self) -> i8 {
        match self {
            Self::Int { scale, .. } => scale,
            Self::Float { .. } => 0,
        }
    }

    pub(super) fn is_decimal(self) -> bool {
        matches!(self, Self::Int { decimal: true, .. })
    }
}

/// `10^n` for a decimal scale (0 for a negative scale, which behaves as an integer here).
pub(super) fn pow10(scale: i8) -> i128 {
    10i128.pow(u32::try_from(scale).unwrap_or(0))
}

/// `n / d` rounded half away from zero (Java's `RoundingMode.HALF_UP`).
pub(super) fn div_half_up(n: i128, d: i128) -> Option<i128> {
    let (q, r) = (n.checked_div(d)?, n.checked_rem(d)?);
    let away = r.checked_abs()?.checked_mul(2)? >= d.checked_abs()?;
    Some(if away { q + n.signum() * d.signum() } else { q })
}

pub(super) fn gcd(mut a: i128, mut b: i128) -> i128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_up_division_rounds_away_from_zero() {
        assert_eq!(div_half_up(25, 10), Some(3));
        assert_eq!(div_half_up(-25, 10), Some(-3));
        assert_eq!(div_half_up(24, 10), Some(2));
        assert_eq!(div_half_up(-26, 10), Some(-3));
    }
}
