//! Synthetic expression matrices for benchmarks and tests.
//!
//! ```text
//! cargo run --release --example synth -- --genes 17941 --samples 310 \
//!     --seed 1 --ties 0.0 --out /tmp/ds21050.parquet
//! ```
//!
//! Genes fall into 50 co-expression modules: each value is a module signal
//! times a per-gene loading plus noise, so thresholded networks are not
//! empty. With `--ties f`, a fraction f of the values is rounded to a
//! coarse grid (0.5), which creates ties; with `--decimals d` every value
//! is rounded to d decimals, as real data often is. Output layout is what
//! `kendall_all_pairs` reads: `gene_id` (string) then `s0..s{n-1}` (Float64).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const MODULES: usize = 50;

struct Args {
    genes: usize,
    samples: usize,
    seed: u64,
    ties: f64,
    decimals: Option<i32>,
    out: String,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        genes: 1000,
        samples: 57,
        seed: 1,
        ties: 0.0,
        decimals: None,
        out: "synthetic.parquet".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--genes" => a.genes = value()?.parse().map_err(|e| format!("--genes: {e}"))?,
            "--samples" => a.samples = value()?.parse().map_err(|e| format!("--samples: {e}"))?,
            "--seed" => a.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--ties" => a.ties = value()?.parse().map_err(|e| format!("--ties: {e}"))?,
            "--decimals" => {
                let d: i32 = value()?.parse().map_err(|e| format!("--decimals: {e}"))?;
                if !(0..=15).contains(&d) {
                    return Err("--decimals must be in 0..=15".into());
                }
                a.decimals = Some(d);
            }
            "--out" => a.out = value()?,
            "-h" | "--help" => {
                return Err(
                    "usage: synth --genes M --samples N [--seed S] [--ties F] [--decimals D] --out FILE".into(),
                );
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if !(0.0..=1.0).contains(&a.ties) {
        return Err("--ties must be in [0, 1]".into());
    }
    Ok(a)
}

fn normal(rng: &mut SmallRng) -> f64 {
    // Box-Muller
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn main() {
    let args = parse().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let (m, n) = (args.genes, args.samples);
    let signals: Vec<Vec<f64>> = (0..MODULES)
        .map(|_| (0..n).map(|_| normal(&mut rng)).collect())
        .collect();
    let mut columns: Vec<Vec<f64>> = vec![Vec::with_capacity(m); n];
    for g in 0..m {
        let module = &signals[g % MODULES];
        let loading = rng.random_range(0.0..3.0);
        for (s, column) in columns.iter_mut().enumerate() {
            let mut x = 8.0 + loading * module[s] + normal(&mut rng);
            if args.ties > 0.0 && rng.random::<f64>() < args.ties {
                x = (x * 2.0).round() / 2.0;
            }
            if let Some(d) = args.decimals {
                let scale = 10f64.powi(d);
                x = (x * scale).round() / scale;
            }
            column.push(x);
        }
    }
    let mut fields = vec![Field::new("gene_id", DataType::Utf8, false)];
    fields.extend((0..n).map(|s| Field::new(format!("s{s}"), DataType::Float64, false)));
    let schema = Arc::new(Schema::new(fields));
    let mut arrays: Vec<ArrayRef> = vec![Arc::new(StringArray::from_iter_values(
        (0..m).map(|g| format!("G{g:06}")),
    ))];
    arrays.extend(
        columns
            .into_iter()
            .map(|c| Arc::new(Float64Array::from(c)) as ArrayRef),
    );
    let batch = RecordBatch::try_new(Arc::clone(&schema), arrays).expect("valid batch");
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let file = std::fs::File::create(&args.out).unwrap_or_else(|e| {
        eprintln!("cannot create {}: {e}", args.out);
        std::process::exit(1)
    });
    let mut writer = ArrowWriter::try_new(file, schema, Some(props)).expect("writer");
    writer.write(&batch).expect("write");
    writer.close().expect("close");
    eprintln!(
        "wrote {} ({m} genes x {n} samples, ties {})",
        args.out, args.ties
    );
}
