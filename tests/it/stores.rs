//! Sources on object stores: `file://` URLs, an HTTP server (nginx) and S3
//! (moto's server) give bit-identical rows to the local file; a missing
//! object, a missing bucket, an unreachable host and a scheme without a store
//! are errors naming the source, in seconds.
//!
//! The servers run on 127.0.0.1 on a free port, started by the test and
//! stopped when it ends; where nginx or moto is not installed the test prints
//! "skipped: ..." and passes (`.ci/run` installs both).

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::prelude::SessionContext;

use crate::common::{assert_contains, ctx, error, run};

/// 61 genes x 57 samples, every gene with ties, one constant gene.
const TIES: &str = "tests/data/bladder_ties.parquet";

/// One output row: (gene_i, gene_j, tau bits, p bits, n).
type Row = (String, String, u64, u64, i64);

/// The rows of batches of (gene_i, gene_j, tau, p_value, n), sorted: equal
/// vectors mean bit-identical rows.
fn rows_of(batches: &[RecordBatch]) -> Vec<Row> {
    let mut out = Vec::new();
    for b in batches {
        let gi = cast(b.column(0), &DataType::Utf8).unwrap();
        let gj = cast(b.column(1), &DataType::Utf8).unwrap();
        let (gi, gj) = (gi.as_string::<i32>(), gj.as_string::<i32>());
        let tau = b.column(2).as_primitive::<Float64Type>();
        let p = b.column(3).as_primitive::<Float64Type>();
        let n = b.column(4).as_primitive::<Int64Type>();
        for r in 0..b.num_rows() {
            out.push((
                gi.value(r).to_string(),
                gj.value(r).to_string(),
                tau.value(r).to_bits(),
                p.value(r).to_bits(),
                n.value(r),
            ));
        }
    }
    out.sort();
    out
}

/// The query whose rows are compared.
fn pairs_sql(source: &str) -> String {
    format!("SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs('{source}')")
}

/// Every output row of `source`, sorted.
async fn rows(ctx: &SessionContext, source: &str) -> Vec<Row> {
    let sql = pairs_sql(source);
    let batches = run(ctx, &sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows_of(&batches)
}

#[tokio::test]
async fn file_urls_read_like_paths() {
    let c = ctx(2);
    let expected = rows(&c, TIES).await;
    assert_eq!(expected.len(), 61 * 60 / 2);
    let absolute = std::fs::canonicalize(TIES).unwrap();
    let url = format!("file://{}", absolute.display());
    assert!(rows(&c, &url).await == expected, "{url}: rows differ");
    let missing = format!(
        "file://{}/no_such.parquet",
        absolute.parent().unwrap().display()
    );
    let msg = error(&c, &pairs_sql(&missing)).await;
    assert_contains(&msg, &[&missing, "cannot open"]);
}

#[tokio::test]
async fn a_scheme_without_a_store_is_a_plan_error_naming_the_source() {
    let c = ctx(1);
    let msg = error(&c, &pairs_sql("ftp://example.invalid/x.parquet")).await;
    assert_contains(
        &msg,
        &[
            "ftp://example.invalid/x.parquet",
            "'ftp://' is not a scheme",
            "s3",
        ],
    );
}

#[cfg(not(feature = "cloud"))]
#[tokio::test]
async fn without_the_cloud_feature_a_cloud_url_says_which_feature() {
    let c = ctx(1);
    for url in [
        "s3://bucket/expr.parquet",
        "gs://bucket/expr.parquet",
        "abfss://c@account.dfs.core.windows.net/expr.parquet",
        "http://127.0.0.1:1/expr.parquet",
    ] {
        let msg = error(&c, &pairs_sql(url)).await;
        assert_contains(&msg, &[url, "--features cloud"]);
    }
}

#[cfg(feature = "cloud")]
pub(crate) mod cloud {
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpListener, TcpStream};
    use std::path::Path;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use super::*;
    use crate::common::read_parquet;

    /// A server process, killed when dropped.
    pub(crate) struct Server {
        child: Child,
        pub(crate) port: u16,
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// A port free on 127.0.0.1 when asked.
    fn free_port() -> u16 {
        TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    impl Server {
        /// Starts `command` (which listens on `port`) and waits until it
        /// accepts connections; `log` tells why it did not.
        fn start(
            mut command: Command,
            port: u16,
            log: &dyn Fn() -> String,
        ) -> Result<Self, String> {
            let child = command
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start {command:?}: {e}"))?;
            let mut server = Server { child, port };
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(30) {
                if let Ok(Some(status)) = server.child.try_wait() {
                    return Err(format!("{command:?} exited with {status}: {}", log()));
                }
                let addr = SocketAddr::from(([127, 0, 0, 1], port));
                if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                    return Ok(server);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = server.child.kill();
            Err(format!(
                "{command:?} did not listen on port {port} within 30 s: {}",
                log()
            ))
        }

        /// A one-off HTTP/1.1 request to the server: (status, body).
        pub(crate) fn request(&self, method: &str, path: &str, body: &[u8]) -> (u16, String) {
            let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
            let head = format!(
                "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                self.port,
                body.len()
            );
            stream.write_all(head.as_bytes()).unwrap();
            stream.write_all(body).unwrap();
            let mut response = Vec::new();
            stream.read_to_end(&mut response).unwrap();
            let text = String::from_utf8_lossy(&response).into_owned();
            let status = text
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            (status, text)
        }
    }

    /// nginx serving `root` on a free port, or why not.
    fn nginx(root: &Path) -> Result<Server, String> {
        let binary = ["nginx", "/usr/sbin/nginx"]
            .into_iter()
            .find(|b| Command::new(b).arg("-v").output().is_ok())
            .ok_or("nginx is not installed")?;
        let port = free_port();
        let dir = root.display();
        // One process (no master, so no switch to an unprivileged user who
        // could not read the temp dir), its files in the temp dir.
        let config = format!(
            "daemon off;\nmaster_process off;\npid {dir}/nginx.pid;\n\
             error_log {dir}/error.log;\nevents {{ worker_connections 64; }}\n\
             http {{\n  access_log {dir}/access.log;\n  client_body_temp_path {dir}/body;\n\
               default_type application/octet-stream;\n\
               server {{ listen 127.0.0.1:{port}; root {dir}; }}\n}}\n"
        );
        let conf = root.join("nginx.conf");
        std::fs::write(&conf, config).unwrap();
        let mut command = Command::new(binary);
        command
            .arg("-p")
            .arg(root)
            .arg("-e")
            .arg(root.join("error.log"))
            .arg("-c")
            .arg(&conf);
        let log = root.join("error.log");
        Server::start(command, port, &|| {
            std::fs::read_to_string(&log).unwrap_or_default()
        })
    }

    /// moto's S3 server on a free port, or why not.
    pub(crate) fn moto() -> Result<Server, String> {
        let importable = Command::new("python3")
            .args(["-c", "import moto.server"])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !importable {
            return Err("moto[server] is not installed for python3".into());
        }
        let port = free_port();
        let mut command = Command::new("python3");
        command.args([
            "-m",
            "moto.server",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ]);
        Server::start(command, port, &String::new)
    }

    #[tokio::test]
    async fn http_sources_equal_the_local_file_and_a_404_names_the_url() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(TIES, dir.path().join("ties.parquet")).unwrap();
        let c = ctx(2);
        let gz = dir.path().join("ties.tsv.gz");
        run(
            &c,
            &format!(
                "COPY (SELECT * FROM '{TIES}') TO '{}' STORED AS CSV OPTIONS \
                 ('format.delimiter' '\t', 'format.compression' 'gzip', \
                 'format.has_header' 'true')",
                gz.display()
            ),
        )
        .await
        .unwrap();
        let server = match nginx(dir.path()) {
            Ok(s) => s,
            Err(why) => {
                println!("skipped: {why}");
                return;
            }
        };
        let expected = rows(&c, TIES).await;
        assert_eq!(expected.len(), 61 * 60 / 2);
        let base = format!("http://127.0.0.1:{}", server.port);
        for name in ["ties.parquet", "ties.tsv.gz"] {
            let url = format!("{base}/{name}");
            assert!(rows(&c, &url).await == expected, "{url}: rows differ");
        }
        let missing = format!("{base}/missing.parquet");
        let msg = error(&c, &pairs_sql(&missing)).await;
        assert_contains(&msg, &[&missing]);
    }

    #[tokio::test]
    async fn an_unreachable_host_is_an_error_in_seconds() {
        let c = ctx(1);
        // Port 1 on the loopback: nothing listens there.
        let url = "http://127.0.0.1:1/x.parquet";
        let start = Instant::now();
        let msg = error(&c, &pairs_sql(url)).await;
        let took = start.elapsed();
        assert_contains(&msg, &[url]);
        assert!(took < Duration::from_secs(15), "took {took:?}: {msg}");
    }

    /// The shell, the AWS variables of the environment replaced by `aws`.
    fn shell_command_with_aws(aws: &[(&str, String)]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_datafusion-kendall"));
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("AWS_") {
                command.env_remove(key);
            }
        }
        command.envs(aws.iter().map(|(k, v)| (k, v)));
        command
    }

    /// moto's credentials and endpoint, as the environment gives them.
    pub(crate) fn moto_env(server: &Server) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", "test".to_string()),
            ("AWS_SECRET_ACCESS_KEY", "test".to_string()),
            ("AWS_REGION", "us-east-1".to_string()),
            ("AWS_ENDPOINT", format!("http://127.0.0.1:{}", server.port)),
            ("AWS_ALLOW_HTTP", "true".to_string()),
        ]
    }

    /// Runs the shell with `sql`, the AWS variables of the environment
    /// replaced by `aws`: (success, stderr).
    fn shell_with_aws(sql: &str, aws: &[(&str, String)]) -> (bool, String) {
        let out = shell_command_with_aws(aws)
            .args(["-q", "-c", sql])
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// The credentials come from the environment, which is process-wide: the
    /// queries run in a child process (the shell) with its own.
    #[tokio::test]
    async fn s3_sources_from_env_credentials_equal_the_local_file() {
        let server = match moto() {
            Ok(s) => s,
            Err(why) => {
                println!("skipped: {why}");
                return;
            }
        };
        let bucket = "kendall-stores-test";
        let (status, text) = server.request("PUT", &format!("/{bucket}"), b"");
        assert_eq!(status, 200, "creating the bucket: {text}");
        let data = std::fs::read(TIES).unwrap();
        let (status, text) = server.request("PUT", &format!("/{bucket}/ties.parquet"), &data);
        assert_eq!(status, 200, "uploading: {text}");

        let aws = moto_env(&server);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("pairs.parquet");
        let source = format!("s3://{bucket}/ties.parquet");
        let copy = format!("COPY ({}) TO '{}'", pairs_sql(&source), out.display());
        let (ok, stderr) = shell_with_aws(&copy, &aws);
        assert!(ok, "{copy}: {stderr}");
        let expected = rows(&ctx(2), TIES).await;
        assert!(
            rows_of(&[read_parquet(&out)]) == expected,
            "{source}: rows differ"
        );

        for missing in [
            format!("s3://{bucket}/no_such.parquet"),
            "s3://kendall-no-such-bucket/ties.parquet".to_string(),
        ] {
            let (ok, stderr) = shell_with_aws(&pairs_sql(&missing), &aws);
            assert!(!ok, "{missing} was read");
            assert_contains(&stderr, &[&missing]);
        }
        // Without plain HTTP allowed, the http:// endpoint is refused.
        let (ok, stderr) = shell_with_aws(&pairs_sql(&source), &aws[..4]);
        assert!(
            !ok,
            "{source} was read over plain HTTP without AWS_ALLOW_HTTP"
        );
        assert_contains(&stderr, &[&source]);
    }

    /// The objects of `bucket` and their bytes, read with boto3 (moto's
    /// own dependency) as another S3 client would.
    fn objects(server: &Server, bucket: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
        let script = "import boto3, sys\n\
            s3 = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id='test', \
            aws_secret_access_key='test', region_name='us-east-1')\n\
            keys = [o['Key'] for o in s3.list_objects_v2(Bucket=sys.argv[2]).get('Contents', [])]\n\
            bodies = [s3.get_object(Bucket=sys.argv[2], Key=k)['Body'].read() for k in keys]\n\
            print('\\n'.join(k + '\\t' + b.hex() for k, b in zip(keys, bodies)))\n";
        let out = Command::new("python3")
            .args([
                "-c",
                script,
                &format!("http://127.0.0.1:{}", server.port),
                bucket,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|line| !line.is_empty())
            .map(|line| {
                let (key, hex) = line.split_once('\t').unwrap();
                let bytes = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect();
                (key.to_string(), bytes)
            })
            .collect()
    }

    /// A COPY to S3 that fails or is cancelled leaves the bucket as it was:
    /// an existing target keeps its bytes, an object written beside the
    /// target during the COPY stays, and nothing staged is left; a COPY
    /// that completes moves its files below the target.
    #[test]
    fn s3_exports_that_fail_or_are_cancelled_leave_the_bucket_as_it_was() {
        let server = match moto() {
            Ok(s) => s,
            Err(why) => {
                println!("skipped: {why}");
                return;
            }
        };
        let bucket = "kendall-exports-test";
        let (status, text) = server.request("PUT", &format!("/{bucket}"), b"");
        assert_eq!(status, 200, "creating the bucket: {text}");
        let yesterday = "gene_i,gene_j,tau\nA,B,0.5\n";
        for key in ["net.csv", "out/notes.txt"] {
            let (status, text) =
                server.request("PUT", &format!("/{bucket}/{key}"), yesterday.as_bytes());
            assert_eq!(status, 200, "uploading {key}: {text}");
        }
        let aws = moto_env(&server);
        let demo = crate::shell::demo();
        let before = objects(&server, bucket);

        // Fails at run time onto an existing object.
        let failing = format!(
            "COPY (SELECT gene_i, gene_j, tau, n / (n - n) AS boom FROM \
             kendall_all_pairs('{demo}')) TO 's3://{bucket}/net.csv'"
        );
        let (ok, stderr) = shell_with_aws(&failing, &aws);
        assert!(!ok && stderr.contains("Divide by zero"), "{stderr}");
        assert_eq!(objects(&server, bucket), before);

        // Cancelled while another client writes beside the target.
        let slow = format!(
            "SET kendall.kernel = 'naive'; COPY (SELECT gene_i, gene_j, tau FROM \
             kendall_all_pairs('{demo}') WHERE abs(tau) > 0.5) TO 's3://{bucket}/out/'"
        );
        let child = shell_command_with_aws(&aws)
            .args(["-p", "1", "-c", &slow])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1000));
        let (status, _) = server.request("PUT", &format!("/{bucket}/out/during.txt"), b"x");
        assert_eq!(status, 200);
        std::thread::sleep(Duration::from_millis(500));
        crate::shell::interrupt(&child);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{stderr}");
        let mut expected = before.clone();
        expected.insert("out/during.txt".into(), b"x".to_vec());
        assert_eq!(objects(&server, bucket), expected);

        // Completed: its Parquet files below out/, nothing staged left.
        let fast = format!(
            "COPY (SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{demo}') \
             WHERE abs(tau) > 0.5) TO 's3://{bucket}/out/'"
        );
        let (ok, stderr) = shell_with_aws(&fast, &aws);
        assert!(ok, "{stderr}");
        let after: Vec<String> = objects(&server, bucket).into_keys().collect();
        let written: Vec<&String> = after
            .iter()
            .filter(|k| k.starts_with("out/") && k.ends_with(".parquet"))
            .collect();
        assert!(!written.is_empty(), "{after:?}");
        assert_eq!(after.len(), 3 + written.len(), "{after:?}");
        assert!(
            !after.iter().any(|k| k.contains("kendall-copy")),
            "{after:?}"
        );
    }
}
