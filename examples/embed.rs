//! Embedding `kendall_all_pairs` in your own DataFusion program.
//!
//! Run: `cargo run --example embed [path/to/expression.parquet]`

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use datafusion::datasource::MemTable;
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

    // Any table registered on the context is an input by name: here a
    // memory table built in the program (4 genes x 5 samples).
    let genes = StringArray::from(vec!["BRCA1", "TP53", "MYC", "EGFR"]);
    let mut columns: Vec<(String, ArrayRef)> = vec![("gene".into(), Arc::new(genes))];
    for s in 0..5 {
        let values: Vec<f64> = (0..4).map(|g| ((g * 3 + s * 7) % 5) as f64).collect();
        columns.push((format!("sample_{s}"), Arc::new(Float64Array::from(values))));
    }
    let batch = RecordBatch::try_from_iter(columns)?;
    let table = MemTable::try_new(batch.schema(), vec![vec![batch]])?;
    ctx.register_table("in_memory", Arc::new(table))?;
    ctx.sql("SELECT gene_i, gene_j, tau, n FROM kendall_all_pairs('in_memory')")
        .await?
        .show()
        .await?;
    Ok(())
}
