//! Interrupted exports: a `COPY` to a local path that fails or is cancelled
//! leaves nothing that it wrote behind.
//!
//! DataFusion writes local files through `object_store`, which writes each
//! file to a staging name (`net.csv#1`) and renames it to the target when the
//! upload completes. A cancelled COPY drops the upload without its clean-up,
//! so the staging file stays; a COPY that fails may still complete a file (an
//! empty `net.csv` when the first batch fails, or some partition files of a
//! directory). Either way the output is not the query's answer, so the shell
//! removes every file at the target that the statement wrote.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use datafusion::sql::parser::Statement as DFStatement;

/// The local path a `COPY ... TO` statement writes (`None` for other
/// statements and for URLs such as `s3://`, whose staging is the store's).
pub fn local_copy_target(statement: &DFStatement) -> Option<PathBuf> {
    let DFStatement::CopyTo(copy) = statement else {
        return None;
    };
    let target = copy.target.as_str();
    match target.split_once("://") {
        None => Some(PathBuf::from(target)),
        Some(("file", path)) => Some(PathBuf::from(path)),
        Some(_) => None,
    }
}

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

/// Removes what a failed or cancelled COPY to `target` wrote since `since`:
/// the target file and its staging files (`NAME#N`), or, for a directory
/// target, the files below it; returns what it removed. Files older than
/// `since` (a previous export) are left alone.
pub fn remove_partial_output(target: &Path, since: SystemTime) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let mut candidates = Vec::new();
    if let (Some(dir), Some(name)) = (target.parent(), target.file_name()) {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let prefix = format!("{}#", name.to_string_lossy());
        candidates.extend(entries(dir).into_iter().filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix(&prefix))
                .is_some_and(is_number)
        }));
    }
    if target.is_file() {
        candidates.push(target.to_path_buf());
    } else if target.is_dir() {
        // Partitioned output: the files below the directory.
        let mut dirs = vec![target.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for path in entries(&dir) {
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    candidates.push(path);
                }
            }
        }
    }
    for path in candidates {
        let recent = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= since);
        if recent && std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default()
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
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

    #[test]
    fn finds_local_targets_only() {
        assert_eq!(
            local_copy_target(&parse("COPY (SELECT 1) TO 'out/net.csv'")),
            Some(PathBuf::from("out/net.csv"))
        );
        assert_eq!(
            local_copy_target(&parse("COPY (SELECT 1) TO 'file:///tmp/net.csv'")),
            Some(PathBuf::from("/tmp/net.csv"))
        );
        assert_eq!(
            local_copy_target(&parse("COPY (SELECT 1) TO 's3://b/net.csv'")),
            None
        );
        assert_eq!(local_copy_target(&parse("SELECT 1")), None);
    }

    #[test]
    fn removes_only_what_the_statement_wrote() {
        let dir = tempfile_dir();
        let since = SystemTime::now() - std::time::Duration::from_secs(1);
        let target = dir.join("net.csv");
        for name in [
            "net.csv#1",
            "net.csv#12",
            "net.csv",
            "other.csv#1",
            "net.csv#x",
        ] {
            std::fs::write(dir.join(name), "x").unwrap();
        }
        // Older than the statement (a previous export): kept.
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        assert!(remove_partial_output(&target, later).is_empty());
        assert!(dir.join("net.csv").exists());
        let mut removed = remove_partial_output(&target, since);
        removed.sort();
        assert_eq!(
            removed,
            vec![
                dir.join("net.csv"),
                dir.join("net.csv#1"),
                dir.join("net.csv#12")
            ]
        );
        assert!(dir.join("other.csv#1").exists() && dir.join("net.csv#x").exists());
        // A directory target: staging files below it.
        let out = dir.join("out");
        std::fs::create_dir_all(out.join("k=1")).unwrap();
        std::fs::write(out.join("k=1").join("a.parquet#1"), "x").unwrap();
        std::fs::write(out.join("k=1").join("b.parquet"), "x").unwrap();
        let mut removed = remove_partial_output(&out, since);
        removed.sort();
        assert_eq!(
            removed,
            vec![
                out.join("k=1").join("a.parquet#1"),
                out.join("k=1").join("b.parquet")
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "kendall-export-test-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
