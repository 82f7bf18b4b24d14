//! 64-bit integer values are ranked exactly: integers above 2^53 that f64
//! would merge (2^53 and 2^53 + 1) are distinct values, not ties.

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{Array, Float64Array, Int64Array, StringArray, UInt64Array};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::common::{batch, by_key, ctx, pairs, write_parquet};

/// tau-b of two integer vectors, counted naively over all sample pairs in
/// exact integer arithmetic (NaN when either vector is constant).
fn tau_b(x: &[i128], y: &[i128]) -> f64 {
    let n = x.len();
    let (mut s, mut tx, mut ty) = (0i64, 0i64, 0i64);
    for a in 0..n {
        for b in a + 1..n {
            let dx = (x[b] - x[a]).signum() as i64;
            let dy = (y[b] - y[a]).signum() as i64;
            s += dx * dy;
            tx += i64::from(dx == 0);
            ty += i64::from(dy == 0);
        }
    }
    let n0 = (n * (n - 1) / 2) as i64;
    s as f64 / (((n0 - tx) as f64) * ((n0 - ty) as f64)).sqrt()
}

/// `genes` × `samples` integers `base + k`, k in 0..6 (so there are ties,
/// and values that only differ beyond f64's 53 bits).
fn matrix(base: i128, genes: usize, samples: usize, seed: u64) -> Vec<Vec<i128>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..genes)
        .map(|_| {
            (0..samples)
                .map(|_| base + rng.random_range(0..6i128))
                .collect()
        })
        .collect()
}

fn gene_names(genes: usize) -> Vec<String> {
    (0..genes).map(|g| format!("G{g}")).collect()
}

/// The column of gene or sample values as Int64 or UInt64.
fn ints(values: impl Iterator<Item = i128>, unsigned: bool) -> Arc<dyn Array> {
    if unsigned {
        Arc::new(UInt64Array::from_iter_values(
            values.map(|v| u64::try_from(v).unwrap()),
        ))
    } else {
        Arc::new(Int64Array::from_iter_values(
            values.map(|v| i64::try_from(v).unwrap()),
        ))
    }
}

/// Writes `m` as genes_as_rows: `gene` then one integer column per sample.
fn write_rows(path: &Path, m: &[Vec<i128>], unsigned: bool) {
    let names = gene_names(m.len());
    let mut columns: Vec<(String, Arc<dyn Array>)> = vec![(
        "gene".into(),
        Arc::new(StringArray::from_iter_values(&names)),
    )];
    for s in 0..m[0].len() {
        columns.push((format!("s{s}"), ints(m.iter().map(|g| g[s]), unsigned)));
    }
    write_parquet(
        path,
        &batch(
            columns
                .iter()
                .map(|(n, c)| (n.as_str(), Arc::clone(c)))
                .collect(),
        ),
    );
}

/// Checks every pair of the query against [`tau_b`] of `m`.
async fn assert_exact(sql: &str, m: &[Vec<i128>]) {
    let rows = pairs(&ctx(2), sql).await;
    let names = gene_names(m.len());
    assert_eq!(rows.len(), m.len() * (m.len() - 1) / 2, "{sql}");
    let got = by_key(&rows);
    for i in 0..m.len() {
        for j in i + 1..m.len() {
            let expected = tau_b(&m[i], &m[j]);
            let t = got[&(names[i].clone(), names[j].clone())];
            assert!(
                (t - expected).abs() <= 1e-12,
                "{sql}: {} {}: {t} vs {expected}",
                names[i],
                names[j]
            );
        }
    }
}

#[tokio::test]
async fn integers_beyond_2_pow_53_are_not_ties() {
    let dir = tempfile::tempdir().unwrap();
    // The smallest case: 2^53 and 2^53 + 1 are one f64; as integers they
    // order the samples as the second gene does, so tau is 1 (f64: NaN).
    let path = dir.path().join("two.parquet");
    let two53 = 1i128 << 53;
    let m = vec![vec![two53, two53 + 1], vec![0, 1]];
    write_rows(&path, &m, false);
    let rows = pairs(
        &ctx(1),
        &format!("SELECT * FROM kendall_all_pairs('{}')", path.display()),
    )
    .await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].tau, 1.0);

    for (name, base, unsigned) in [
        ("int64.parquet", two53 - 3, false),
        ("int64_min.parquet", i128::from(i64::MIN), false),
        ("uint64.parquet", i128::from(u64::MAX) - 5, true),
    ] {
        let path = dir.path().join(name);
        let m = matrix(base, 12, 40, 7);
        write_rows(&path, &m, unsigned);
        for kernel in ["naive", "gse", "vse", "bitset", "zero"] {
            let sql = format!(
                "SET kendall.kernel = '{kernel}'; SET kendall.simd = 'auto'; \
                 SELECT * FROM kendall_all_pairs('{}')",
                path.display()
            );
            assert_exact(&sql, &m).await;
        }
    }
}

/// Float64 and Int64 sample columns in one file: values compare exactly
/// across them (2^53 as a float equals the integer 2^53, and is below 2^53 + 1).
#[tokio::test]
async fn integer_and_float_columns_compare_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.parquet");
    let m = matrix(1i128 << 53, 10, 30, 11);
    let names = gene_names(m.len());
    let mut columns: Vec<(String, Arc<dyn Array>)> = vec![(
        "gene".into(),
        Arc::new(StringArray::from_iter_values(&names)),
    )];
    for s in 0..m[0].len() {
        // Even values are exact in f64 at 2^53: every third column is Float64.
        let column: Arc<dyn Array> = if s % 3 == 0 {
            let even = |v: i128| v - (v & 1);
            Arc::new(Float64Array::from_iter_values(
                m.iter().map(|g| even(g[s]) as f64),
            ))
        } else {
            ints(m.iter().map(|g| g[s]), false)
        };
        columns.push((format!("s{s}"), column));
    }
    write_parquet(
        &path,
        &batch(
            columns
                .iter()
                .map(|(n, c)| (n.as_str(), Arc::clone(c)))
                .collect(),
        ),
    );
    let exact: Vec<Vec<i128>> = m
        .iter()
        .map(|g| {
            g.iter()
                .enumerate()
                .map(|(s, &v)| if s % 3 == 0 { v - (v & 1) } else { v })
                .collect()
        })
        .collect();
    assert_exact(
        &format!("SELECT * FROM kendall_all_pairs('{}')", path.display()),
        &exact,
    )
    .await;
}

/// The other layouts read integer values exactly too.
#[tokio::test]
async fn integers_are_exact_in_every_layout() {
    let dir = tempfile::tempdir().unwrap();
    let m = matrix(i128::from(u64::MAX) - 5, 8, 25, 3);
    let names = gene_names(m.len());
    let columns = dir.path().join("columns.parquet");
    let mut cols: Vec<(String, Arc<dyn Array>)> = Vec::new();
    for (g, name) in names.iter().enumerate() {
        cols.push((name.clone(), ints(m[g].iter().copied(), true)));
    }
    write_parquet(
        &columns,
        &batch(
            cols.iter()
                .map(|(n, c)| (n.as_str(), Arc::clone(c)))
                .collect(),
        ),
    );
    assert_exact(
        &format!(
            "SET kendall.layout = 'genes_as_columns'; SELECT * FROM kendall_all_pairs('{}')",
            columns.display()
        ),
        &m,
    )
    .await;

    let m = matrix((1i128 << 60) + 1, 8, 25, 5);
    let long = dir.path().join("long.parquet");
    let (mut g_col, mut s_col, mut v_col) = (Vec::new(), Vec::new(), Vec::new());
    for (g, name) in names.iter().enumerate() {
        for (s, &v) in m[g].iter().enumerate() {
            g_col.push(name.clone());
            s_col.push(format!("s{s}"));
            v_col.push(v);
        }
    }
    write_parquet(
        &long,
        &batch(vec![
            ("gene", Arc::new(StringArray::from(g_col))),
            ("sample", Arc::new(StringArray::from(s_col))),
            ("value", ints(v_col.into_iter(), false)),
        ]),
    );
    assert_exact(
        &format!(
            "SET kendall.layout = 'long'; SELECT * FROM kendall_all_pairs('{}')",
            long.display()
        ),
        &m,
    )
    .await;
}
