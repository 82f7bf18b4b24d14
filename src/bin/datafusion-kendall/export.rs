//! `COPY` statements as the shell rewrites them before planning: a default
//! format for directory targets and absolute local targets on a cluster.
//! (Where the output is written until it is complete: `staging.rs`.)

use std::path::Path;

use datafusion::sql::parser::Statement as DFStatement;

/// Gives a `COPY ... TO` without `STORED AS` whose target has no file
/// extension (a directory such as `'s3://lab/net/'`) the Parquet format,
/// where DataFusion would refuse it ("Format not explicitly set"): a network
/// written to a directory is Parquet unless the statement says otherwise.
/// Returns whether it did.
pub fn default_copy_format(statement: &mut DFStatement) -> bool {
    let DFStatement::CopyTo(copy) = statement else {
        return false;
    };
    let path = copy
        .target
        .split_once("://")
        .map_or(copy.target.as_str(), |(_, p)| p);
    // A trailing slash names a directory whatever its name holds ('out.d/').
    let directory = path.ends_with('/');
    if copy.stored_as.is_some() || (!directory && Path::new(path).extension().is_some()) {
        return false;
    }
    copy.stored_as = Some("PARQUET".to_string());
    true
}

/// Makes the local relative target of a `COPY` absolute (from the shell's
/// working directory): on a cluster the executors write it, and they were
/// started elsewhere. URLs and absolute paths are kept.
pub fn absolute_copy_target(statement: &mut DFStatement) {
    let DFStatement::CopyTo(copy) = statement else {
        return;
    };
    let path = Path::new(&copy.target);
    if copy.target.contains("://") || path.is_absolute() {
        return;
    }
    if let Ok(absolute) = std::path::absolute(path) {
        let trailing = copy.target.ends_with('/');
        copy.target = absolute.display().to_string();
        // A trailing slash says "a directory" to DataFusion's writer.
        if trailing && !copy.target.ends_with('/') {
            copy.target.push('/');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one statement of `sql`.
    fn parse(sql: &str) -> DFStatement {
        datafusion::sql::parser::DFParser::parse_sql(sql)
            .unwrap()
            .pop_front()
            .unwrap()
    }

    #[test]
    fn copy_to_a_directory_defaults_to_parquet() {
        let stored_as = |sql: &str| {
            let mut statement = parse(sql);
            default_copy_format(&mut statement);
            match statement {
                DFStatement::CopyTo(copy) => copy.stored_as,
                _ => unreachable!("a COPY statement"),
            }
        };
        let parquet = Some("PARQUET".to_string());
        assert_eq!(stored_as("COPY (SELECT 1) TO 's3://lab/net/'"), parquet);
        assert_eq!(stored_as("COPY (SELECT 1) TO 'out/net'"), parquet);
        assert_eq!(stored_as("COPY (SELECT 1) TO 'out.d/'"), parquet);
        assert_eq!(
            stored_as("COPY (SELECT 1) TO 's3://lab.data/net.v2/'"),
            parquet
        );
        assert_eq!(stored_as("COPY (SELECT 1) TO 'net.csv'"), None);
        assert_eq!(stored_as("COPY (SELECT 1) TO 's3://lab/net.csv'"), None);
        assert_eq!(
            stored_as("COPY (SELECT 1) TO 'out/' STORED AS CSV"),
            Some("CSV".to_string())
        );
        let mut select = parse("SELECT 1");
        assert!(!default_copy_format(&mut select));
    }

    #[test]
    fn relative_copy_targets_become_absolute() {
        let target = |sql: &str| {
            let mut statement = parse(sql);
            absolute_copy_target(&mut statement);
            match statement {
                DFStatement::CopyTo(copy) => copy.target,
                _ => unreachable!("a COPY statement"),
            }
        };
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            target("COPY (SELECT 1) TO 'out/net.csv'"),
            cwd.join("out/net.csv").display().to_string()
        );
        assert_eq!(
            target("COPY (SELECT 1) TO 'out/net/'"),
            format!("{}/", cwd.join("out/net").display())
        );
        assert_eq!(target("COPY (SELECT 1) TO '/tmp/net.csv'"), "/tmp/net.csv");
        assert_eq!(target("COPY (SELECT 1) TO 's3://b/net/'"), "s3://b/net/");
    }
}
