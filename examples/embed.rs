//! Embedding `kendall_all_pairs` in your own DataFusion program.
//!
//! Run: `cargo run --example embed [path/to/expression.parquet]`

use datafusion::error::Result;
use datafusion::prelude::SessionContext;

#[tokio::main]
async fn main() -> Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "data/demo_expression.parquet".to_string());

    // Any SessionContext works: register adds the table function and the
    // `kendall.*` options.
    let ctx = SessionContext::new();
    datafusion_kendall::register(&ctx)?;

    // Options can be set with SQL ...
    ctx.sql("SET kendall.variant = 'b'")
        .await?
        .collect()
        .await?;

    // ... and the pairs used like any other table: here the degree of each
    // gene in the |tau| >= 0.6 network.
    let df = ctx
        .sql(&format!(
            "WITH edges AS (
                 SELECT gene_i, gene_j FROM kendall_all_pairs('{path}')
                 WHERE abs(tau) >= 0.6 AND NOT isnan(tau)
             )
             SELECT gene, count(*) AS degree
             FROM (SELECT gene_i AS gene FROM edges UNION ALL SELECT gene_j FROM edges)
             GROUP BY gene ORDER BY degree DESC, gene LIMIT 10"
        ))
        .await?;
    df.show().await?;
    Ok(())
}
