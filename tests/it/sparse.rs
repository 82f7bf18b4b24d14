//! Sparse inputs: long triples read with absent entries as zeros that are
//! mostly zeros are kept as their non-zero values and ranked sparse. Every
//! kernel, cross pairs (samples in another order, some not shared) and
//! candidate pairs give, bit for bit, what the same matrices give dense.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, DictionaryArray, Float32Array, Float64Array, Int32Array, Int64Array,
    StringArray,
};
use datafusion::arrow::datatypes::Int32Type;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use datafusion_kendall::SparseTable;

use crate::common::{self, ctx, run, sorted_bits};

const COLUMNS: &str = "gene_i, gene_j, tau, p_value, n";

/// A deterministic generator (PCG-style LCG).
struct Draw(u64);

impl Draw {
    fn below(&mut self, k: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % k
    }
}

/// `genes` × `n` values, mostly zeros: zero-inflated counts, negative
/// values, binarised genes (0/1, and 1/2 without zeros), a constant gene,
/// ties, one dense gene.
fn values(genes: usize, n: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut d = Draw(seed);
    (0..genes)
        .map(|g| {
            (0..n)
                .map(|_| {
                    let r = d.below(100);
                    match g % 8 {
                        0 if r < 85 => 0.0,
                        0 => (1 + d.below(30)) as f64 / 3.0,
                        1 => f64::from(r < 10),
                        2 if r < 70 => 0.0,
                        2 => d.below(5) as f64 - 2.0,
                        3 => 0.0,
                        4 if g == 4 => 1.0 + f64::from(r < 40),
                        4 if r < 95 => 0.0,
                        4 => d.below(1 << 20) as f64,
                        5 => -f64::from(r < 20),
                        6 if r < 90 => 0.0,
                        6 => d.below(3) as f64,
                        _ if r < 75 => 0.0,
                        _ => d.below(1000) as f64 / 7.0,
                    }
                })
                .collect()
        })
        .collect()
}

/// Registers `rows` (genes × samples named `samples`) as `name_dense`
/// (genes as rows) and `name_long` (triples of the non-zero values, in a
/// shuffled order, genes as a dictionary; a few explicit zeros too).
fn register(ctx: &SessionContext, name: &str, rows: &[Vec<f64>], samples: &[String], seed: u64) {
    let ids: Vec<String> = (0..rows.len()).map(|g| format!("g{g}")).collect();
    let mut columns: Vec<(&str, ArrayRef)> = vec![(
        "gene",
        Arc::new(StringArray::from_iter_values(&ids)) as ArrayRef,
    )];
    for (k, s) in samples.iter().enumerate() {
        let column: Float64Array = rows.iter().map(|r| Some(r[k])).collect();
        columns.push((s.as_str(), Arc::new(column)));
    }
    let dense = common::batch(columns);
    let table = MemTable::try_new(dense.schema(), vec![vec![dense]]).unwrap();
    ctx.register_table(format!("{name}_dense"), Arc::new(table))
        .unwrap();
    let mut triples = Vec::new();
    let mut d = Draw(seed);
    for (g, row) in rows.iter().enumerate() {
        for (k, &x) in row.iter().enumerate() {
            // Every gene and sample named once at least (an explicit zero).
            if x != 0.0 || k == 0 || g == 0 || d.below(50) == 0 {
                triples.push((g as i32, k, x));
            }
        }
    }
    for i in (1..triples.len()).rev() {
        triples.swap(i, d.below(i as u64 + 1) as usize);
    }
    // Genes first seen in order (the dense table's order), the rest
    // shuffled.
    triples.sort_by_key(|&(g, k, _)| if k == 0 { (0, g) } else { (1, 0) });
    let nonzero = triples.iter().filter(|t| t.2 != 0.0).count();
    assert!(
        nonzero * 2 <= rows.len() * samples.len(),
        "mostly zeros: kept sparse"
    );
    let gene = DictionaryArray::<Int32Type>::try_new(
        triples.iter().map(|t| t.0).collect(),
        Arc::new(StringArray::from_iter_values(&ids)),
    )
    .unwrap();
    let sample = StringArray::from_iter_values(triples.iter().map(|t| samples[t.1].as_str()));
    let value = Float64Array::from_iter_values(triples.iter().map(|t| t.2));
    let long = common::batch(vec![
        ("gene", Arc::new(gene) as ArrayRef),
        ("sample", Arc::new(sample)),
        ("value", Arc::new(value)),
    ]);
    let table = MemTable::try_new(long.schema(), vec![vec![long]]).unwrap();
    ctx.register_table(format!("{name}_long"), Arc::new(table))
        .unwrap();
    // And as a sparse table: each gene's non-zero values in sample order,
    // with a few explicit zeros stored (32-bit offsets, the genes' ids as
    // a dictionary).
    let (mut offsets, mut indices, mut data) = (vec![0i32], Vec::new(), Vec::new());
    for row in rows {
        for (k, &x) in row.iter().enumerate() {
            if x != 0.0 || d.below(40) == 0 {
                indices.push(k as i32);
                data.push(x);
            }
        }
        offsets.push(indices.len() as i32);
    }
    let genes = DictionaryArray::<Int32Type>::try_new(
        (0..rows.len() as i32).collect(),
        Arc::new(StringArray::from_iter_values(&ids)),
    )
    .unwrap();
    let table = SparseTable::try_new(
        &genes,
        &StringArray::from_iter_values(samples),
        &Int32Array::from(offsets),
        &Int32Array::from(indices),
        &Float64Array::from(data),
    )
    .unwrap();
    ctx.register_table(format!("{name}_table"), Arc::new(table))
        .unwrap();
}

async fn rows_of(ctx: &SessionContext, sql: &str) -> Vec<common::RowBits> {
    sorted_bits(&run(ctx, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}")))
}

#[tokio::test]
async fn sparse_inputs_equal_their_dense_form_bit_for_bit() {
    for n in [7usize, 64, 300] {
        let ctx = ctx(2);
        let names: Vec<String> = (0..n).map(|k| format!("c{k}")).collect();
        let left = values(16, n, n as u64);
        register(&ctx, "a", &left, &names, 1);
        let dense = "SET kendall.layout = 'genes_as_rows'";
        let sparse = "SET kendall.layout = 'long'; SET kendall.absent = 'zero'";
        for kernel in ["auto", "naive", "gse", "vse", "bitset", "zero"] {
            let set = format!("SET kendall.kernel = '{kernel}'");
            let q = |t: &str| format!("SELECT {COLUMNS} FROM kendall_all_pairs('{t}')");
            let expected = rows_of(&ctx, &format!("{dense}; {set}; {}", q("a_dense"))).await;
            let got = rows_of(&ctx, &format!("{sparse}; {set}; {}", q("a_long"))).await;
            assert_eq!(got.len(), 16 * 15 / 2);
            assert_eq!(got, expected, "all pairs, n {n}, kernel {kernel}");
            // A sparse table implies the layout.
            let got = rows_of(&ctx, &format!("{dense}; {set}; {}", q("a_table"))).await;
            assert_eq!(
                got, expected,
                "all pairs of a sparse table, n {n}, kernel {kernel}"
            );
        }
        // The right matrix: its samples in another order, one of the left's
        // missing and one of its own.
        let mut right_names: Vec<String> = names.iter().skip(1).cloned().collect();
        right_names.reverse();
        right_names.push("extra".into());
        let right = values(9, right_names.len(), n as u64 + 7);
        register(&ctx, "b", &right, &right_names, 2);
        let q =
            |l: &str, r: &str| format!("SELECT {COLUMNS} FROM kendall_cross_pairs('{l}', '{r}')");
        let expected = rows_of(&ctx, &format!("{dense}; {}", q("a_dense", "b_dense"))).await;
        let got = rows_of(&ctx, &format!("{sparse}; {}", q("a_long", "b_long"))).await;
        assert_eq!(got.len(), 16 * 9);
        assert_eq!(got, expected, "cross pairs, n {n}");
        let tables = rows_of(&ctx, &format!("{dense}; {}", q("a_table", "b_table"))).await;
        assert_eq!(tables, expected, "cross pairs of sparse tables, n {n}");
        let mixed = rows_of(&ctx, &format!("{sparse}; {}", q("a_table", "b_long"))).await;
        assert_eq!(mixed, expected, "a sparse table against triples, n {n}");
        assert!(got.iter().all(|r| r.4 == n as i64 - 1), "shared samples");
        // Candidate pairs, on both sides sparse.
        let list = common::batch(vec![
            (
                "gene",
                Arc::new(StringArray::from_iter_values([
                    "g0", "g1", "g4", "g7", "g3",
                ])) as ArrayRef,
            ),
            (
                "peak",
                Arc::new(StringArray::from_iter_values([
                    "g1", "g2", "g0", "g8", "g5",
                ])),
            ),
        ]);
        let table = MemTable::try_new(list.schema(), vec![vec![list]]).unwrap();
        ctx.register_table("pairs", Arc::new(table)).unwrap();
        let q = |l: &str, r: &str| {
            format!("SELECT {COLUMNS} FROM kendall_candidate_pairs('pairs', '{l}', '{r}')")
        };
        let expected = rows_of(&ctx, &format!("{dense}; {}", q("a_dense", "b_dense"))).await;
        let got = rows_of(&ctx, &format!("{sparse}; {}", q("a_long", "b_long"))).await;
        assert_eq!(got.len(), 5);
        assert_eq!(got, expected, "candidate pairs, n {n}");
        let tables = rows_of(&ctx, &format!("{dense}; {}", q("a_table", "b_table"))).await;
        assert_eq!(tables, expected, "candidate pairs of sparse tables, n {n}");
    }
}

/// Sample ids as integers (as Python hands cells over) number alike.
#[tokio::test]
async fn integer_sample_ids_are_read_as_their_text() {
    let ctx = ctx(1);
    let gene = StringArray::from_iter_values(["x", "x", "x", "y", "y", "y"]);
    let sample: Int64Array = [0i64, 1, 2, 0, 1, 2].into_iter().collect();
    let value = Float64Array::from_iter_values([1.0, 0.0, 3.0, 0.0, 0.0, 2.0]);
    let long = common::batch(vec![
        ("gene", Arc::new(gene) as ArrayRef),
        ("sample", Arc::new(sample)),
        ("value", Arc::new(value)),
    ]);
    let table = MemTable::try_new(long.schema(), vec![vec![long]]).unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    let batches = run(
        &ctx,
        "SET kendall.layout = 'long'; SET kendall.absent = 'zero'; \
         SELECT tau, n FROM kendall_all_pairs('t')",
    )
    .await
    .unwrap();
    let tau = common::first_f64(&batches, 0);
    // x = (1, 0, 3), y = (0, 0, 2): S = 2 of 3 pairs, one tied in y.
    assert_eq!(tau, 2.0 / (3.0f64 * 2.0).sqrt());
    assert_eq!(batches[0].column(1).len(), 1);
}

/// 64-bit integers that f64 would merge stay distinct when kept sparse:
/// the same bits as the dense Int64 matrix.
#[tokio::test]
async fn sparse_integers_beyond_2_pow_53_are_exact() {
    let ctx = ctx(2);
    let (genes, n) = (6usize, 40usize);
    let mut d = Draw(99);
    let big = 1i64 << 60;
    let m: Vec<Vec<i64>> = (0..genes)
        .map(|_| {
            (0..n)
                .map(|_| {
                    if d.below(10) < 7 {
                        0
                    } else {
                        big + d.below(4) as i64
                    }
                })
                .collect()
        })
        .collect();
    let ids: Vec<String> = (0..genes).map(|g| format!("g{g}")).collect();
    let mut columns: Vec<(String, ArrayRef)> = vec![(
        "gene".into(),
        Arc::new(StringArray::from_iter_values(&ids)) as ArrayRef,
    )];
    for k in 0..n {
        let column: Int64Array = m.iter().map(|r| Some(r[k])).collect();
        columns.push((format!("c{k}"), Arc::new(column)));
    }
    let dense = common::batch(
        columns
            .iter()
            .map(|(n, c)| (n.as_str(), c.clone()))
            .collect(),
    );
    let table = MemTable::try_new(dense.schema(), vec![vec![dense]]).unwrap();
    ctx.register_table("ints_dense", Arc::new(table)).unwrap();
    let (mut g, mut s, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for (gene, row) in m.iter().enumerate() {
        for (k, &x) in row.iter().enumerate() {
            if x != 0 || gene == 0 {
                g.push(ids[gene].clone());
                s.push(format!("c{k}"));
                v.push(x);
            }
        }
    }
    let long = common::batch(vec![
        ("gene", Arc::new(StringArray::from(g)) as ArrayRef),
        ("sample", Arc::new(StringArray::from(s))),
        ("value", Arc::new(Int64Array::from(v))),
    ]);
    let table = MemTable::try_new(long.schema(), vec![vec![long]]).unwrap();
    ctx.register_table("ints_long", Arc::new(table)).unwrap();
    let expected = rows_of(
        &ctx,
        &format!("SELECT {COLUMNS} FROM kendall_all_pairs('ints_dense')"),
    )
    .await;
    let got = rows_of(
        &ctx,
        &format!(
            "SET kendall.layout = 'long'; SET kendall.absent = 'zero'; \
             SELECT {COLUMNS} FROM kendall_all_pairs('ints_long')"
        ),
    )
    .await;
    assert_eq!(got.len(), genes * (genes - 1) / 2);
    assert_eq!(got, expected);
    // As f64 the non-zero values of a gene would be one tie group; exactly,
    // a gene's four integers are distinct values.
    let merged = rows_of(
        &ctx,
        "SET kendall.layout = 'long'; SET kendall.absent = 'zero'; \
         SELECT gene_i, gene_j, tau, p_value, n FROM \
         kendall_all_pairs('ints_long') WHERE gene_i = 'g0'",
    )
    .await;
    assert!(merged.iter().any(|r| f64::from_bits(r.2).abs() > 0.0));
}

/// A sparse table read as a table: its stored entries as triples, plus one
/// zero for a gene and one for a sample without any; 32-bit float values
/// widened, 64-bit offsets and indices taken.
#[tokio::test]
async fn a_sparse_table_reads_as_triples() {
    let ctx = ctx(1);
    // Genes x, y, empty z over samples a, b, c, d (d without any entry).
    let table = SparseTable::try_new(
        &StringArray::from_iter_values(["x", "y", "z"]),
        &StringArray::from_iter_values(["a", "b", "c", "d"]),
        &Int64Array::from(vec![0i64, 2, 4, 4]),
        &Int64Array::from(vec![0i64, 2, 1, 2]),
        &Float32Array::from(vec![1.5f32, 0.0, -2.0, 4.0]),
    )
    .unwrap();
    assert_eq!((table.genes(), table.samples(), table.entries()), (3, 4, 4));
    ctx.register_table("t", Arc::new(table)).unwrap();
    let batches = run(
        &ctx,
        "SELECT CAST(gene AS VARCHAR) AS g, CAST(sample AS VARCHAR) AS s, value FROM t \
         ORDER BY g, s",
    )
    .await
    .unwrap();
    let got: Vec<String> = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string()
        .lines()
        .filter(|l| l.starts_with("| "))
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        got,
        [
            "| x | a | 1.5 |",
            "| x | c | 0.0 |",
            "| x | d | 0.0 |",
            "| y | b | -2.0 |",
            "| y | c | 4.0 |",
            "| z | a | 0.0 |",
        ]
    );
    // x = (1.5, 0, 0, 0), y = (0, -2, 4, 0): (a, b) concordant, (a, c)
    // discordant, (a, d) tied in y, the rest tied in x: S = 0.
    let batches = run(
        &ctx,
        "SELECT tau FROM kendall_all_pairs('t') WHERE gene_i = 'x' AND gene_j = 'y'",
    )
    .await
    .unwrap();
    let tau = common::first_f64(&batches, 0);
    assert_eq!(tau, 0.0);
}

/// Bad arrays are refused when the table is made, naming what is wrong.
#[test]
fn bad_sparse_tables_are_refused_by_name() {
    let genes = StringArray::from_iter_values(["x", "y"]);
    let samples = StringArray::from_iter_values(["a", "b", "c"]);
    let make = |genes: &StringArray, offsets: Vec<i32>, indices: Vec<i32>, data: Vec<f64>| {
        SparseTable::try_new(
            genes,
            &samples,
            &Int32Array::from(offsets),
            &Int32Array::from(indices),
            &Float64Array::from(data),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
    };
    let cases = [
        (
            make(&genes, vec![0, 1], vec![0], vec![1.0]),
            "2 genes need 3 offsets",
        ),
        (
            make(&genes, vec![0, 2, 1], vec![0, 1], vec![1.0, 1.0]),
            "offsets must run from 0",
        ),
        (
            make(&genes, vec![0, 2, 2], vec![1, 0], vec![1.0, 1.0]),
            "gene 'x' lists sample 'a' out of order",
        ),
        // Case: offsets that go up past the entries, then down to their
        // number, are an error, not a read past the arrays (a panic).
        (
            make(&genes, vec![0, 3, 2], vec![0, 1], vec![1.0, 1.0]),
            "offsets decrease at gene 'y' (3 then 2)",
        ),
        (
            make(&genes, vec![0, 2, 2], vec![1, 1], vec![1.0, 1.0]),
            "gene 'x' lists sample 'b' twice",
        ),
        (
            make(&genes, vec![0, 1, 2], vec![0, 3], vec![1.0, 1.0]),
            "gene 'y' has an entry at sample index 3",
        ),
        (
            make(&genes, vec![0, 1, 2], vec![0, 1], vec![1.0, f64::NAN]),
            "gene 'y', sample 'b' has the value NaN",
        ),
        (
            make(&genes, vec![0, 1, 2], vec![0], vec![1.0, 1.0]),
            "1 sample indices but 2 values",
        ),
        (
            make(
                &StringArray::from_iter_values(["x", "x"]),
                vec![0, 1, 2],
                vec![0, 1],
                vec![1.0, 1.0],
            ),
            "gene id 'x' is given twice",
        ),
    ];
    for (got, want) in cases {
        assert!(got.contains(want), "{got:?} should say {want:?}");
    }
}
