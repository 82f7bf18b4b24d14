//! Filters on `tau`, `p_value` and `q_value` pushed into the pair loop.
//!
//! Comparisons of `tau`, `p_value`, `q_value` or their `abs` with a literal (`=`, `<>`, `<`, `<=`,
//! `>`, `>=`, `BETWEEN`), combined with `AND`, `OR` and `NOT`, become a
//! [`TauPredicate`] that the execution plan applies to each pair before it
//! becomes a row. The predicate reproduces Arrow's float comparison exactly
//! (IEEE 754 total order, in which NaN is greater than every number and
//! equal to itself), so pushing a filter down never changes a result. The
//! tau values a predicate may pass ([`TauPredicate::eval_tau`]) bound each
//! pair's numerator, which lets kernels stop early
//! ([`crate::kernel::bound`]).

use std::cmp::Ordering;
use std::fmt;

use crate::schema::{P_VALUE, Q_VALUE, TAU};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator};

/// The per-pair statistic a comparison reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    /// The `tau` column.
    Tau,
    /// The `p_value` column.
    PValue,
    /// The `q_value` column.
    QValue,
}

impl Stat {
    fn name(self) -> &'static str {
        match self {
            Stat::Tau => TAU,
            Stat::PValue => P_VALUE,
            Stat::QValue => Q_VALUE,
        }
    }
}

/// A comparison operator, as `column <op> literal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `=`
    Eq,
    /// `<>`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
}

impl Cmp {
    fn from_operator(op: Operator) -> Option<Self> {
        Some(match op {
            Operator::Eq => Cmp::Eq,
            Operator::NotEq => Cmp::NotEq,
            Operator::Lt => Cmp::Lt,
            Operator::LtEq => Cmp::LtEq,
            Operator::Gt => Cmp::Gt,
            Operator::GtEq => Cmp::GtEq,
            _ => return None,
        })
    }

    /// The operator with its operands swapped: `lit < col` is `col > lit`.
    fn flipped(self) -> Self {
        match self {
            Cmp::Lt => Cmp::Gt,
            Cmp::LtEq => Cmp::GtEq,
            Cmp::Gt => Cmp::Lt,
            Cmp::GtEq => Cmp::LtEq,
            other => other,
        }
    }

    fn holds(self, ord: Ordering) -> bool {
        match self {
            Cmp::Eq => ord == Ordering::Equal,
            Cmp::NotEq => ord != Ordering::Equal,
            Cmp::Lt => ord == Ordering::Less,
            Cmp::LtEq => ord != Ordering::Greater,
            Cmp::Gt => ord == Ordering::Greater,
            Cmp::GtEq => ord != Ordering::Less,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq => "=",
            Cmp::NotEq => "!=",
            Cmp::Lt => "<",
            Cmp::LtEq => "<=",
            Cmp::Gt => ">",
            Cmp::GtEq => ">=",
        }
    }
}

/// One pair's statistics as a predicate reads them (NaN where not computed).
#[derive(Debug, Clone, Copy)]
pub struct PairValues {
    /// tau.
    pub tau: f64,
    /// The p-value.
    pub p_value: f64,
    /// The q-value.
    pub q_value: f64,
}

impl PairValues {
    /// Only tau known.
    pub fn tau(tau: f64) -> Self {
        PairValues {
            tau,
            p_value: f64::NAN,
            q_value: f64::NAN,
        }
    }
}

/// A predicate on one pair's tau, p-value and q-value, evaluated inside the kernel loop.
#[derive(Debug, Clone, PartialEq)]
pub enum TauPredicate {
    /// `stat <op> value`, or `abs(stat) <op> value` when `abs` is set.
    Compare {
        /// The column compared.
        stat: Stat,
        /// Compare the absolute value.
        abs: bool,
        /// The comparison.
        op: Cmp,
        /// The literal.
        value: f64,
    },
    /// Both hold.
    And(Box<TauPredicate>, Box<TauPredicate>),
    /// Either holds.
    Or(Box<TauPredicate>, Box<TauPredicate>),
    /// The inner predicate does not hold.
    Not(Box<TauPredicate>),
}

impl TauPredicate {
    /// Translates a filter expression, or `None` when it is not a predicate
    /// on `tau` and `p_value` that can be evaluated exactly here.
    pub fn from_expr(expr: &Expr) -> Option<Self> {
        match expr {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
                Operator::And => Some(Self::and(Self::from_expr(left)?, Self::from_expr(right)?)),
                Operator::Or => Some(TauPredicate::Or(
                    Box::new(Self::from_expr(left)?),
                    Box::new(Self::from_expr(right)?),
                )),
                _ => {
                    let op = Cmp::from_operator(*op)?;
                    if let (Some((stat, abs)), Some(value)) = (stat_operand(left), literal(right)) {
                        Some(TauPredicate::Compare {
                            stat,
                            abs,
                            op,
                            value,
                        })
                    } else {
                        let ((stat, abs), value) = (stat_operand(right)?, literal(left)?);
                        Some(TauPredicate::Compare {
                            stat,
                            abs,
                            op: op.flipped(),
                            value,
                        })
                    }
                }
            },
            Expr::Between(Between {
                expr,
                negated,
                low,
                high,
            }) => {
                let (stat, abs) = stat_operand(expr)?;
                let (low, high) = (literal(low)?, literal(high)?);
                let inside = Self::and(
                    TauPredicate::Compare {
                        stat,
                        abs,
                        op: Cmp::GtEq,
                        value: low,
                    },
                    TauPredicate::Compare {
                        stat,
                        abs,
                        op: Cmp::LtEq,
                        value: high,
                    },
                );
                Some(if *negated {
                    TauPredicate::Not(Box::new(inside))
                } else {
                    inside
                })
            }
            Expr::Not(inner) => Some(TauPredicate::Not(Box::new(Self::from_expr(inner)?))),
            _ => None,
        }
    }

    /// The conjunction of two predicates.
    pub fn and(a: TauPredicate, b: TauPredicate) -> Self {
        TauPredicate::And(Box::new(a), Box::new(b))
    }

    /// Whether a pair with these values passes (`p_value` is only read
    /// when [`TauPredicate::reads_p_value`], `q_value` when
    /// [`TauPredicate::reads_q_value`]).
    #[inline]
    pub fn eval(&self, x: &PairValues) -> bool {
        match self {
            TauPredicate::Compare {
                stat,
                abs,
                op,
                value,
            } => {
                let v = match stat {
                    Stat::Tau => x.tau,
                    Stat::PValue => x.p_value,
                    Stat::QValue => x.q_value,
                };
                let v = if *abs { v.abs() } else { v };
                op.holds(v.total_cmp(value))
            }
            TauPredicate::And(a, b) => a.eval(x) && b.eval(x),
            TauPredicate::Or(a, b) => a.eval(x) || b.eval(x),
            TauPredicate::Not(a) => !a.eval(x),
        }
    }

    /// The predicate for a pair whose tau is `tau` and whose p- and
    /// q-values are not known: `Some(pass)` when tau alone decides it,
    /// `None` when the outcome depends on a p- or q-value (Kleene's
    /// three-valued logic: `false AND unknown` is `false`, `true OR
    /// unknown` is `true`). Where this is `Some(false)`, [`TauPredicate::eval`]
    /// is `false` whatever the p- and q-values.
    pub fn eval_tau(&self, tau: f64) -> Option<bool> {
        match self {
            TauPredicate::Compare {
                stat: Stat::Tau, ..
            } => Some(self.eval(&PairValues::tau(tau))),
            TauPredicate::Compare { .. } => None,
            TauPredicate::And(a, b) => match (a.eval_tau(tau), b.eval_tau(tau)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            TauPredicate::Or(a, b) => match (a.eval_tau(tau), b.eval_tau(tau)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            TauPredicate::Not(a) => a.eval_tau(tau).map(|pass| !pass),
        }
    }

    /// The finite literals the predicate compares `tau` (or `abs(tau)`)
    /// with: between two consecutive ones (and their negatives), in the
    /// IEEE 754 total order, [`TauPredicate::eval_tau`] is constant.
    pub fn tau_literals(&self, out: &mut Vec<f64>) {
        match self {
            TauPredicate::Compare {
                stat: Stat::Tau,
                value,
                ..
            } => {
                if value.is_finite() {
                    out.extend([*value, -*value]);
                }
            }
            TauPredicate::Compare { .. } => {}
            TauPredicate::And(a, b) | TauPredicate::Or(a, b) => {
                a.tau_literals(out);
                b.tau_literals(out);
            }
            TauPredicate::Not(a) => a.tau_literals(out),
        }
    }

    /// Whether the predicate compares `stat`.
    fn reads(&self, wanted: Stat) -> bool {
        match self {
            TauPredicate::Compare { stat, .. } => *stat == wanted,
            TauPredicate::And(a, b) | TauPredicate::Or(a, b) => a.reads(wanted) || b.reads(wanted),
            TauPredicate::Not(a) => a.reads(wanted),
        }
    }

    /// Whether the predicate needs the p-value.
    pub fn reads_p_value(&self) -> bool {
        self.reads(Stat::PValue)
    }

    /// Whether the predicate needs the q-value.
    pub fn reads_q_value(&self) -> bool {
        self.reads(Stat::QValue)
    }
}

impl fmt::Display for TauPredicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TauPredicate::Compare {
                stat,
                abs,
                op,
                value,
            } => {
                let col = stat.name();
                if *abs {
                    write!(f, "abs({col}) {} {value}", op.symbol())
                } else {
                    write!(f, "{col} {} {value}", op.symbol())
                }
            }
            TauPredicate::And(a, b) => write!(f, "({a} AND {b})"),
            TauPredicate::Or(a, b) => write!(f, "({a} OR {b})"),
            TauPredicate::Not(a) => write!(f, "NOT {a}"),
        }
    }
}

/// The statistic a column reference names, with whether it is under `abs`.
fn stat_operand(expr: &Expr) -> Option<(Stat, bool)> {
    let stat = |e: &Expr| match e {
        Expr::Column(c) if c.name == TAU => Some(Stat::Tau),
        Expr::Column(c) if c.name == P_VALUE => Some(Stat::PValue),
        Expr::Column(c) if c.name == Q_VALUE => Some(Stat::QValue),
        _ => None,
    };
    match expr {
        Expr::ScalarFunction(f) if f.name() == "abs" && f.args.len() == 1 => {
            Some((stat(&f.args[0])?, true))
        }
        other => Some((stat(other)?, false)),
    }
}

/// A non-null numeric literal (possibly behind a cast) as f64.
fn literal(expr: &Expr) -> Option<f64> {
    let value: &ScalarValue = match expr {
        Expr::Literal(v, _) => v,
        Expr::Cast(c) => return literal(&c.expr),
        Expr::TryCast(c) => return literal(&c.expr),
        _ => return None,
    };
    if !value.data_type().is_numeric() {
        return None;
    }
    match value.cast_to(&DataType::Float64).ok()? {
        ScalarValue::Float64(Some(x)) => Some(x),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::functions::math::expr_fn::abs;
    use datafusion::logical_expr::{col, lit};

    fn pred(e: Expr) -> TauPredicate {
        TauPredicate::from_expr(&e).expect("pushable")
    }

    #[test]
    fn comparisons_follow_arrow_total_order() {
        let p = pred(abs(col("tau")).gt_eq(lit(0.8)));
        assert!(
            p.eval(&PairValues::tau(0.8))
                && p.eval(&PairValues::tau(-0.9))
                && !p.eval(&PairValues::tau(0.5))
        );
        // NaN sorts above every number in Arrow comparisons.
        assert!(p.eval(&PairValues::tau(f64::NAN)));
        let p = pred(lit(0.5).gt(col("tau")));
        assert!(
            p.eval(&PairValues::tau(0.4))
                && !p.eval(&PairValues::tau(0.5))
                && !p.eval(&PairValues::tau(f64::NAN))
        );
        let p = pred(col("tau").between(lit(-0.1), lit(0.1)));
        assert!(
            p.eval(&PairValues::tau(0.0))
                && p.eval(&PairValues::tau(0.1))
                && !p.eval(&PairValues::tau(0.2))
        );
        let p = pred(col("tau").not_between(lit(-0.1), lit(0.1)));
        assert!(!p.eval(&PairValues::tau(0.0)) && p.eval(&PairValues::tau(0.2)));
        let p = pred(col("tau").lt(lit(-0.5)).or(col("tau").gt(lit(0.5_f32))));
        assert!(
            p.eval(&PairValues::tau(-0.6))
                && p.eval(&PairValues::tau(0.6))
                && !p.eval(&PairValues::tau(0.0))
        );
        let p = pred(col("tau").gt(lit(0i64)));
        assert!(p.eval(&PairValues::tau(0.1)) && !p.eval(&PairValues::tau(0.0)));
    }

    #[test]
    fn other_filters_are_not_pushed() {
        for e in [
            col("gene_i").eq(lit("TP53")),
            col("tau").gt(col("tau")),
            col("tau").gt(lit(ScalarValue::Float64(None))),
            col("tau").gt(lit("x")),
            col("tau").gt(lit(0.5)).and(col("gene_j").eq(lit("A"))),
            (col("tau") + lit(1.0)).gt(lit(0.5)),
        ] {
            assert!(TauPredicate::from_expr(&e).is_none(), "{e}");
        }
    }
}
