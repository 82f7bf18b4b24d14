//! Filters on the `group` column of a grouped call (`kendall.groups`),
//! pushed into the scan: `"group" = 'B'`, `"group" IN ('B', 'T')`, their
//! negations and `AND` / `OR` / `NOT` of these become a [`GroupPredicate`],
//! evaluated on each group's label before the group is ranked, so that a
//! group filtered out is never computed.

use std::collections::BTreeSet;
use std::fmt;

use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};

use crate::gene_filter::string_literal;
use crate::schema::GROUP;

/// A predicate on a group's label.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupPredicate {
    /// The label is one of these.
    In(BTreeSet<String>),
    /// Both hold.
    And(Box<GroupPredicate>, Box<GroupPredicate>),
    /// Either holds.
    Or(Box<GroupPredicate>, Box<GroupPredicate>),
    /// The inner predicate does not hold.
    Not(Box<GroupPredicate>),
}

impl GroupPredicate {
    /// Translates a filter expression, or `None` when it is not a predicate
    /// on the `group` column alone that can be evaluated exactly here.
    pub fn from_expr(expr: &Expr) -> Option<Self> {
        let is = |labels: BTreeSet<String>, negated: bool| {
            let is = GroupPredicate::In(labels);
            match negated {
                true => GroupPredicate::Not(Box::new(is)),
                false => is,
            }
        };
        match expr {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
                Operator::And => Some(Self::and(Self::from_expr(left)?, Self::from_expr(right)?)),
                Operator::Or => Some(GroupPredicate::Or(
                    Box::new(Self::from_expr(left)?),
                    Box::new(Self::from_expr(right)?),
                )),
                Operator::Eq | Operator::NotEq => {
                    let label = match (is_group(left), is_group(right)) {
                        (true, _) => string_literal(right)?,
                        (_, true) => string_literal(left)?,
                        _ => return None,
                    };
                    Some(is(BTreeSet::from([label]), *op == Operator::NotEq))
                }
                _ => None,
            },
            Expr::InList(InList {
                expr,
                list,
                negated,
            }) if is_group(expr) => {
                let labels = list.iter().map(string_literal).collect::<Option<_>>()?;
                Some(is(labels, *negated))
            }
            Expr::Not(inner) => Some(GroupPredicate::Not(Box::new(Self::from_expr(inner)?))),
            _ => None,
        }
    }

    /// Both predicates.
    pub fn and(a: Self, b: Self) -> Self {
        GroupPredicate::And(Box::new(a), Box::new(b))
    }

    /// Whether the group labelled `label` is kept.
    pub fn matches(&self, label: &str) -> bool {
        match self {
            GroupPredicate::In(labels) => labels.contains(label),
            GroupPredicate::And(a, b) => a.matches(label) && b.matches(label),
            GroupPredicate::Or(a, b) => a.matches(label) || b.matches(label),
            GroupPredicate::Not(a) => !a.matches(label),
        }
    }

    /// The predicate of the pushed-down `filters` that read `group` alone,
    /// joined with AND.
    pub fn of(filters: &[Expr]) -> Option<Self> {
        filters.iter().filter_map(Self::from_expr).reduce(Self::and)
    }
}

impl fmt::Display for GroupPredicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupPredicate::In(labels) => {
                let list: Vec<String> = labels.iter().map(|g| format!("'{g}'")).collect();
                write!(f, "{GROUP} IN ({})", list.join(", "))
            }
            GroupPredicate::And(a, b) => write!(f, "({a} AND {b})"),
            GroupPredicate::Or(a, b) => write!(f, "({a} OR {b})"),
            GroupPredicate::Not(a) => write!(f, "NOT {a}"),
        }
    }
}

fn is_group(expr: &Expr) -> bool {
    matches!(expr, Expr::Column(c) if c.name == GROUP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{col, lit};

    #[test]
    fn labels_in_and_out() {
        let p = GroupPredicate::from_expr(&col(GROUP).eq(lit("B"))).unwrap();
        assert!(p.matches("B") && !p.matches("T"));
        let p =
            GroupPredicate::from_expr(&col(GROUP).in_list(vec![lit("B"), lit("T")], true)).unwrap();
        assert!(!p.matches("B") && !p.matches("T") && p.matches("NK"));
        let p = GroupPredicate::from_expr(&col(GROUP).not_eq(lit("B")).or(col(GROUP).eq(lit("B"))))
            .unwrap();
        assert!(p.matches("B") && p.matches("T"));
        // Another column, or a comparison that is not equality: not ours.
        assert!(GroupPredicate::from_expr(&col("tau").gt(lit(0.5))).is_none());
        assert!(GroupPredicate::from_expr(&col(GROUP).gt(lit("B"))).is_none());
        assert!(
            GroupPredicate::from_expr(&col(GROUP).eq(lit("B")).and(col("tau").gt(lit(0.5))))
                .is_none()
        );
    }
}
