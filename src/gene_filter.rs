//! Filters on `gene_i` / `gene_j` pushed into the scan.
//!
//! `gene_i = 'X'`, `gene_j IN ('X', 'Y')`, and `AND` / `OR` / `NOT` of these
//! become a [`GenePredicate`], evaluated exactly on each pair's gene indices.
//! When the predicate implies that every matching pair touches a small set
//! of genes (`gene_i = 'X' OR gene_j = 'X'`, `gene_i IN (...)`, ...), only
//! the pairs touching those genes are computed: m pairs per gene instead of
//! m²/2 ([`GenePredicate::anchors`]).

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use crate::schema::{GENE_I, GENE_J};
use datafusion::arrow::array::{Array, StringArray};
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};

/// Which gene column a predicate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Side {
    /// `gene_i`, the gene that comes first in the input.
    I,
    /// `gene_j`, the gene that comes later.
    J,
}

impl Side {
    fn column(self) -> &'static str {
        match self {
            Side::I => GENE_I,
            Side::J => GENE_J,
        }
    }
}

/// A predicate on a pair's gene ids.
#[derive(Debug, Clone, PartialEq)]
pub enum GenePredicate {
    /// The gene on `side` is one of `genes`.
    In {
        /// The column.
        side: Side,
        /// The gene ids.
        genes: BTreeSet<String>,
    },
    /// Both hold.
    And(Box<GenePredicate>, Box<GenePredicate>),
    /// Either holds.
    Or(Box<GenePredicate>, Box<GenePredicate>),
    /// The inner predicate does not hold.
    Not(Box<GenePredicate>),
}

/// Genes every matching pair touches: `gene_i` in the first set or
/// `gene_j` in the second.
pub type Anchors = (BTreeSet<String>, BTreeSet<String>);

/// The anchors a scan walks the touching pairs of, if it walks only those:
/// a gene filter that bounds the genes of its pairs, unless the scan walks
/// a candidate list (`listed`: its own pairs, gene filter or not). `cost`
/// chooses between the sides of an `AND` ([`GenePredicate::anchors_by`]).
pub fn walked_anchors(
    predicate: Option<&GenePredicate>,
    listed: bool,
    cost: &dyn Fn(&Anchors) -> u64,
) -> Option<Anchors> {
    if listed {
        return None;
    }
    predicate?.anchors_by(cost)
}

impl GenePredicate {
    /// Translates a filter expression, or `None` when it is not a predicate
    /// on the gene columns alone that can be evaluated exactly here.
    pub fn from_expr(expr: &Expr) -> Option<Self> {
        match expr {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
                Operator::And => Some(Self::and(Self::from_expr(left)?, Self::from_expr(right)?)),
                Operator::Or => Some(GenePredicate::Or(
                    Box::new(Self::from_expr(left)?),
                    Box::new(Self::from_expr(right)?),
                )),
                Operator::Eq | Operator::NotEq => {
                    let (side, gene) = match (side_of(left), string_literal(right)) {
                        (Some(side), Some(gene)) => (side, gene),
                        _ => (side_of(right)?, string_literal(left)?),
                    };
                    let is = GenePredicate::In {
                        side,
                        genes: BTreeSet::from([gene]),
                    };
                    Some(if *op == Operator::Eq {
                        is
                    } else {
                        GenePredicate::Not(Box::new(is))
                    })
                }
                _ => None,
            },
            Expr::InList(InList {
                expr,
                list,
                negated,
            }) => {
                let side = side_of(expr)?;
                let genes = list
                    .iter()
                    .map(string_literal)
                    .collect::<Option<BTreeSet<_>>>()?;
                let is = GenePredicate::In { side, genes };
                Some(if *negated {
                    GenePredicate::Not(Box::new(is))
                } else {
                    is
                })
            }
            Expr::Not(inner) => Some(GenePredicate::Not(Box::new(Self::from_expr(inner)?))),
            _ => None,
        }
    }

    /// The conjunction of two predicates.
    pub fn and(a: GenePredicate, b: GenePredicate) -> Self {
        GenePredicate::And(Box::new(a), Box::new(b))
    }

    /// Genes that every matching pair touches, when the predicate bounds
    /// them; `None` when matching pairs may avoid every small set. Of the
    /// two sides of an `AND`, the one with fewer names.
    pub fn anchors(&self) -> Option<Anchors> {
        self.anchors_by(&|(i, j): &Anchors| (i.len() + j.len()) as u64)
    }

    /// As [`GenePredicate::anchors`], keeping of the two sides of an `AND`
    /// the one that `cost` (the pairs it walks) finds cheaper, the first on
    /// a tie.
    pub fn anchors_by(&self, cost: &dyn Fn(&Anchors) -> u64) -> Option<Anchors> {
        match self {
            GenePredicate::In {
                side: Side::I,
                genes,
            } => Some((genes.clone(), BTreeSet::new())),
            GenePredicate::In {
                side: Side::J,
                genes,
            } => Some((BTreeSet::new(), genes.clone())),
            GenePredicate::Or(a, b) => {
                let (mut ai, mut aj) = a.anchors_by(cost)?;
                let (bi, bj) = b.anchors_by(cost)?;
                ai.extend(bi);
                aj.extend(bj);
                Some((ai, aj))
            }
            GenePredicate::And(a, b) => match (a.anchors_by(cost), b.anchors_by(cost)) {
                (Some(x), Some(y)) => Some(if cost(&x) <= cost(&y) { x } else { y }),
                (x, y) => x.or(y),
            },
            GenePredicate::Not(_) => None,
        }
    }

    /// Resolves gene ids to input positions, for evaluation per pair.
    pub fn resolve(&self, genes: &StringArray) -> ResolvedGenes {
        // Every position of a name: kendall_cross_pairs may hold a gene id
        // on both sides.
        let mut index: HashMap<&str, Vec<u32>> = HashMap::new();
        for g in 0..genes.len() {
            index.entry(genes.value(g)).or_default().push(g as u32);
        }
        ResolvedGenes::new(self, &index, genes.len())
    }
}

impl fmt::Display for GenePredicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenePredicate::In { side, genes } => {
                let list: Vec<String> = genes.iter().map(|g| format!("'{g}'")).collect();
                write!(f, "{} IN ({})", side.column(), list.join(", "))
            }
            GenePredicate::And(a, b) => write!(f, "({a} AND {b})"),
            GenePredicate::Or(a, b) => write!(f, "({a} OR {b})"),
            GenePredicate::Not(a) => write!(f, "NOT {a}"),
        }
    }
}

/// A [`GenePredicate`] over gene positions.
#[derive(Debug, Clone)]
pub enum ResolvedGenes {
    /// Membership of each gene position in the set, for one side.
    In(Side, Vec<bool>),
    /// Both hold.
    And(Box<ResolvedGenes>, Box<ResolvedGenes>),
    /// Either holds.
    Or(Box<ResolvedGenes>, Box<ResolvedGenes>),
    /// The inner predicate does not hold.
    Not(Box<ResolvedGenes>),
}

impl ResolvedGenes {
    fn new(p: &GenePredicate, index: &HashMap<&str, Vec<u32>>, m: usize) -> Self {
        let rec = |q: &GenePredicate| Box::new(Self::new(q, index, m));
        match p {
            GenePredicate::In { side, genes } => {
                let mut member = vec![false; m];
                for g in genes.iter().filter_map(|g| index.get(g.as_str())).flatten() {
                    member[*g as usize] = true;
                }
                ResolvedGenes::In(*side, member)
            }
            GenePredicate::And(a, b) => ResolvedGenes::And(rec(a), rec(b)),
            GenePredicate::Or(a, b) => ResolvedGenes::Or(rec(a), rec(b)),
            GenePredicate::Not(a) => ResolvedGenes::Not(rec(a)),
        }
    }

    /// Whether the pair of gene positions `(i, j)` passes.
    #[inline]
    pub fn eval(&self, i: u32, j: u32) -> bool {
        match self {
            ResolvedGenes::In(Side::I, member) => member[i as usize],
            ResolvedGenes::In(Side::J, member) => member[j as usize],
            ResolvedGenes::And(a, b) => a.eval(i, j) && b.eval(i, j),
            ResolvedGenes::Or(a, b) => a.eval(i, j) || b.eval(i, j),
            ResolvedGenes::Not(a) => !a.eval(i, j),
        }
    }
}

fn side_of(expr: &Expr) -> Option<Side> {
    match expr {
        Expr::Column(c) if c.name == GENE_I => Some(Side::I),
        Expr::Column(c) if c.name == GENE_J => Some(Side::J),
        _ => None,
    }
}

/// The string a literal (or a cast of one) holds.
pub(crate) fn string_literal(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Literal(v, _) => v.try_as_str().flatten().map(str::to_string),
        Expr::Cast(c) => string_literal(&c.expr),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{col, lit};

    fn pred(e: Expr) -> GenePredicate {
        GenePredicate::from_expr(&e).expect("pushable")
    }

    fn names(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn partners_of_one_gene() {
        let p = pred(col("gene_i").eq(lit("B")).or(lit("B").eq(col("gene_j"))));
        assert_eq!(p.anchors(), Some((names(&["B"]), names(&["B"]))));
        let genes = StringArray::from(vec!["A", "B", "C"]);
        let r = p.resolve(&genes);
        assert!(r.eval(0, 1) && r.eval(1, 2) && !r.eval(0, 2));
    }

    #[test]
    fn in_lists_and_conjunctions() {
        let p = pred(col("gene_i").in_list(vec![lit("A"), lit("C")], false));
        assert_eq!(p.anchors(), Some((names(&["A", "C"]), names(&[]))));
        let p = pred(
            col("gene_i")
                .in_list(vec![lit("A"), lit("C")], false)
                .and(col("gene_j").eq(lit("D"))),
        );
        assert_eq!(p.anchors(), Some((names(&[]), names(&["D"]))));
        let p = pred(col("gene_i").not_eq(lit("A")));
        assert_eq!(p.anchors(), None);
        let genes = StringArray::from(vec!["A", "B", "C"]);
        assert!(!p.resolve(&genes).eval(0, 1) && p.resolve(&genes).eval(1, 2));
        // Unknown genes match nothing.
        let p = pred(col("gene_j").eq(lit("ZZZ")));
        assert!(!p.resolve(&genes).eval(0, 1));
    }

    #[test]
    fn an_and_keeps_the_side_with_fewer_pairs_and_a_list_walks_its_own() {
        // Two names against three, but the three cost less.
        let p = pred(
            col("gene_i")
                .in_list(vec![lit("A"), lit("B")], false)
                .and(col("gene_j").in_list(vec![lit("C"), lit("D"), lit("E")], false)),
        );
        assert_eq!(p.anchors(), Some((names(&["A", "B"]), names(&[]))));
        let cost = |(i, j): &Anchors| 10 * i.len() as u64 + 3 * j.len() as u64;
        let cheaper = Some((names(&[]), names(&["C", "D", "E"])));
        assert_eq!(p.anchors_by(&cost), cheaper);
        // Nested: the inner AND chooses by the same cost.
        let q = GenePredicate::and(p.clone(), pred(col("gene_i").eq(lit("F"))));
        assert_eq!(q.anchors_by(&cost), cheaper);
        let q = GenePredicate::and(p.clone(), pred(col("gene_j").eq(lit("G"))));
        assert_eq!(q.anchors_by(&cost), Some((names(&[]), names(&["G"]))));
        // A tie keeps the first side.
        assert_eq!(p.anchors_by(&|_| 1), Some((names(&["A", "B"]), names(&[]))));
        // A candidate list walks its pairs; no predicate walks every pair.
        assert_eq!(walked_anchors(Some(&p), false, &cost), cheaper);
        assert_eq!(walked_anchors(Some(&p), true, &cost), None);
        assert_eq!(walked_anchors(None, false, &cost), None);
        let not = pred(col("gene_i").not_eq(lit("A")));
        assert_eq!(walked_anchors(Some(&not), false, &cost), None);
    }

    #[test]
    fn other_filters_are_not_pushed() {
        for e in [
            col("gene_i").eq(col("gene_j")),
            col("gene_i").like(lit("A%")),
            col("gene_i").eq(lit("A")).or(col("tau").gt(lit(0.5))),
            col("gene_i").in_list(vec![lit("A"), col("gene_j")], false),
        ] {
            assert!(GenePredicate::from_expr(&e).is_none(), "{e}");
        }
    }
}
