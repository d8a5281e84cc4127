//! `listagg`: the non-blank strings joined in version order, each once with `distinct`.

use super::{Acc, AccError, Accumulator, Cx, Output, State};
use crate::runs::value::Value;

/// Java's `Character.isWhitespace`, which Paimon's blank test uses.
fn java_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | '\u{1C}'..='\u{1F}')
        || (c.is_whitespace() && !matches!(c, '\u{A0}' | '\u{2007}' | '\u{202F}' | '\u{85}'))
}

fn is_blank(s: &str) -> bool {
    s.chars().all(java_whitespace)
}

pub(super) struct ListAggAgg {
    pub(super) delimiter: String,
    pub(super) distinct: bool,
}

impl Accumulator for ListAggAgg {
    fn agg(&self, state: &mut State, input: Acc, cx: &Cx) -> Result<(), AccError> {
        let text = |acc: &Acc| -> Option<String> {
            cx.value(acc).map(|v| match v {
                Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                _ => unreachable!("a listagg column holds strings"),
            })
        };
        let Some(input_text) = text(&input).filter(|s| !is_blank(s)) else { return Ok(()) };
        let Some(mut joined) = text(&state.acc).filter(|s| !is_blank(s)) else {
            state.acc = input;
            return Ok(());
        };
        if self.distinct {
            // Tokens of the accumulated string are taken as they are; the input's are added
            // once each, blank ones skipped.
            let mut seen: Vec<String> = joined.split(self.delimiter.as_str()).map(str::to_owned).collect();
            for token in input_text.split(self.delimiter.as_str()) {
                if !is_blank(token) && !seen.iter().any(|s| s == token) {
                    seen.push(token.to_owned());
                    joined.push_str(&self.delimiter);
                    joined.push_str(token);
                }
            }
        } else {
            joined.push_str(&self.delimiter);
            joined.push_str(&input_text);
        }
        state.acc = Acc::Text(joined);
        Ok(())
    }

    fn output(&self) -> Output {
        Output::Compute
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_is_javas_whitespace() {
        assert!(is_blank("") && is_blank(" \t\n\u{1F}"));
        assert!(!is_blank("\u{A0}") && !is_blank(" a "));
    }
}
