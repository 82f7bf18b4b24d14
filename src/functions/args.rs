//! Reading a table function's arguments: constant SQL expressions, checked
//! with messages that show the function's usage.

use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Expr;

use super::KendallFunction;

/// The arguments of one call of `function`.
pub struct Args<'a> {
    function: &'a dyn KendallFunction,
    exprs: &'a [Expr],
}

impl<'a> Args<'a> {
    /// The arguments `exprs` of a call of `function`, which takes between
    /// `min` and `max` of them (`counts`: the numbers it accepts).
    pub fn new(
        function: &'a dyn KendallFunction,
        exprs: &'a [Expr],
        counts: impl IntoIterator<Item = usize>,
    ) -> Result<Self> {
        let args = Self { function, exprs };
        if !counts.into_iter().any(|c| c == exprs.len()) {
            return Err(args.usage(format!("got {} arguments", exprs.len())));
        }
        Ok(args)
    }

    /// How many arguments the call has.
    pub fn len(&self) -> usize {
        self.exprs.len()
    }

    /// Whether the call has no argument.
    pub fn is_empty(&self) -> bool {
        self.exprs.is_empty()
    }

    /// An error showing the function's usage and `problem`.
    pub fn usage(&self, problem: String) -> DataFusionError {
        DataFusionError::Plan(format!(
            "{}{}: {problem}",
            self.function.name(),
            self.function.usage()
        ))
    }

    /// Argument `i`, a constant string; `what` names it in errors.
    pub fn string(&self, i: usize, what: &str) -> Result<String> {
        match &self.exprs[i] {
            Expr::Literal(value, _) => match value.try_as_str() {
                Some(Some(s)) => Ok(s.to_string()),
                Some(None) => Err(self.usage(format!("{what} is NULL"))),
                None => Err(self.usage(format!(
                    "{what} must be a string, got {} {value}",
                    value.data_type()
                ))),
            },
            other => Err(self.usage(format!(
                "{what} must be a constant string, got the expression {other}"
            ))),
        }
    }

    /// Arguments `from..` as constant strings; `what` names each in errors.
    pub fn strings_from(&self, from: usize, what: &str) -> Result<Vec<String>> {
        (from..self.exprs.len())
            .map(|i| self.string(i, what))
            .collect()
    }

    /// Argument `i`, a positive integer literal (a negated literal is an
    /// error too); `name` names it in errors.
    pub fn positive(&self, i: usize, name: &str) -> Result<usize> {
        let bad = |what: String| {
            Err(self.usage(format!("{name} must be a positive integer, got {what}")))
        };
        let value = match &self.exprs[i] {
            Expr::Literal(value, _) => value,
            Expr::Negative(inner) => return bad(format!("-{inner}")),
            other => return bad(format!("the expression {other}")),
        };
        if value.is_null() {
            return bad("NULL".to_string());
        }
        let k = match value {
            ScalarValue::Int8(Some(v)) => i64::from(*v),
            ScalarValue::Int16(Some(v)) => i64::from(*v),
            ScalarValue::Int32(Some(v)) => i64::from(*v),
            ScalarValue::Int64(Some(v)) => *v,
            ScalarValue::UInt8(Some(v)) => i64::from(*v),
            ScalarValue::UInt16(Some(v)) => i64::from(*v),
            ScalarValue::UInt32(Some(v)) => i64::from(*v),
            ScalarValue::UInt64(Some(v)) => i64::try_from(*v).unwrap_or(i64::MAX),
            other => return bad(format!("{} {other}", other.data_type())),
        };
        if k < 1 {
            return bad(k.to_string());
        }
        Ok(usize::try_from(k).unwrap_or(usize::MAX))
    }
}
