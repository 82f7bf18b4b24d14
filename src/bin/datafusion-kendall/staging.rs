//! Staged exports: a `COPY ... TO` writes under a staging name that this
//! statement alone owns and moves its output into place only once the query
//! has completed, so a failed or cancelled COPY removes only what it created.
//!
//! The target `dir/net.csv` (or `dir/out/`, or `s3://bucket/dir/net.csv`) is
//! rewritten to `dir/.net.csv.kendall-copy-PID-N/net.csv`: a hidden sibling
//! of the target, on the same file system or bucket, so the final move is a
//! rename. Locally the staging directory is made with `create_dir`, which
//! fails if it exists, so no other process's file is ever inside it.
//!
//! - The query fails or is cancelled: the staging directory (or prefix) is
//!   removed; nothing else was touched. A file at the target from before the
//!   statement keeps its bytes; other files beside it, even ones written
//!   while the COPY ran, are never looked at.
//! - The query completes: a single-file output replaces the target in one
//!   rename (atomic on a local file system); the files of a directory output
//!   are moved into the target directory one by one, never over an existing
//!   file. Ctrl-C after the query completed does not interrupt the move.
//! - The shell is killed (SIGKILL, power loss): the hidden staging directory
//!   stays, holding only what this statement wrote; the target is untouched.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::datasource::listing::ListingTableUrl;
use datafusion::error::{DataFusionError, Result};
use datafusion::object_store::path::Path as StorePath;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DFStatement;
use futures::TryStreamExt;

/// What a staging name carries between the target's name and the
/// process's id: `.net.csv.kendall-copy-4242-0`.
const STAGING_MARK: &str = "kendall-copy";

/// A `COPY` redirected into a staging location: [`Staging::commit`] moves
/// its output to the target, [`Staging::abort`] removes it.
#[derive(Debug)]
pub enum Staging {
    /// A local target.
    Local(LocalStaging),
    /// A target in an object store (`s3://`, `gs://`, ...).
    Store(StoreStaging),
}

/// A local target and the staging directory made for it.
#[derive(Debug)]
pub struct LocalStaging {
    /// The path the user asked for (`out/net.csv`, `out/net/`).
    target: PathBuf,
    /// The hidden directory this statement made (`out/.net.csv.kendall-copy-P-N`).
    dir: PathBuf,
    /// Directories above the target that did not exist and were made here
    /// (deepest last), removed again on abort if still empty.
    made_parents: Vec<PathBuf>,
}

/// An object-store target and its staging prefix.
#[derive(Debug)]
pub struct StoreStaging {
    store: Arc<dyn ObjectStore>,
    /// `scheme://host`, for messages.
    base: String,
    /// The target's path in the store.
    target: StorePath,
    /// The staging prefix (`dir/.net.csv.kendall-copy-P-N`).
    prefix: StorePath,
}

/// A name no other statement of any process uses: the process id and a
/// counter within the process.
fn staging_name(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!(".{name}.{STAGING_MARK}-{}-{n}", std::process::id())
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> DataFusionError {
    DataFusionError::Execution(format!("COPY: {what} '{}': {e}", path.display()))
}

fn store_error(what: &str, path: &str, e: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!("COPY: {what} '{path}': {e}"))
}

impl Staging {
    /// Redirects the target of a `COPY` statement into a new staging
    /// location; `None` for other statements, and for a URL whose store the
    /// session cannot open (the COPY then fails as DataFusion says, having
    /// written nothing).
    ///
    /// The target is resolved as DataFusion resolves it when it plans the
    /// COPY ([`ListingTableUrl::parse`]): `file:/tmp/net.csv`,
    /// `file:///tmp/net.csv` and `/tmp/net.csv` are one file, a relative
    /// path is taken from the working directory with `.` and `..` resolved
    /// by name, and percent escapes of a URL are decoded. A target
    /// DataFusion would not write where it says is refused before the
    /// query runs: a path holding a glob character (DataFusion writes into
    /// the directory before the pattern) and a `file:` URL naming a host.
    pub async fn begin(statement: &mut DFStatement, ctx: &SessionContext) -> Result<Option<Self>> {
        let DFStatement::CopyTo(copy) = statement else {
            return Ok(None);
        };
        let refuse =
            |why: &str| DataFusionError::Plan(format!("COPY: the target '{}' {why}", copy.target));
        let url = ListingTableUrl::parse(&copy.target)
            .map_err(|e| refuse(&format!("is neither a path nor a URL ({e})")))?;
        if url.get_glob().is_some() {
            return Err(refuse(
                "holds a glob character (* ? or [), which DataFusion reads as a pattern of \
                 files to write beside; name it without one, or give it as a file:// URL",
            ));
        }
        let trailing = url.is_collection();
        let (staging, new_target) = if url.scheme() == "file" {
            if url.get_url().host_str().is_some_and(|h| !h.is_empty()) {
                return Err(refuse(
                    "names a host; a file URL writes on this machine (file:///path)",
                ));
            }
            let path = url
                .get_url()
                .to_file_path()
                .map_err(|()| refuse("is not a local path"))?;
            if Path::new(&copy.target).file_name().is_none() {
                return Err(refuse("names no file or directory"));
            }
            Self::local(&path, trailing)?
        } else {
            match Self::store(&url, trailing, ctx)? {
                Some(staged) => staged,
                None => return Ok(None),
            }
        };
        copy.target = new_target;
        Ok(Some(staging))
    }

    /// The staging prefix of a target in an object store, and the
    /// rewritten target; `None` when the session has no store for it.
    fn store(
        url: &ListingTableUrl,
        trailing: bool,
        ctx: &SessionContext,
    ) -> Result<Option<(Self, String)>> {
        let Ok(store) = ctx.runtime_env().object_store(url.object_store()) else {
            return Ok(None);
        };
        let base = url
            .object_store()
            .as_str()
            .trim_end_matches('/')
            .to_string();
        // The path as DataFusion writes it: percent escapes decoded.
        let target = url.prefix().clone();
        let Some(name) = target.filename().map(str::to_owned) else {
            return Err(DataFusionError::Plan(format!(
                "COPY: '{}' names no file or directory in the bucket",
                url.as_str()
            )));
        };
        let parent: Vec<_> = target.parts().collect();
        let parent = &parent[..parent.len() - 1];
        let prefix: StorePath = parent
            .iter()
            .cloned()
            .chain(std::iter::once(staging_name(&name).as_str().into()))
            .collect();
        // Each part percent-encoded, so that DataFusion decodes it back.
        let mut staged = url.get_url().clone();
        staged
            .path_segments_mut()
            .map_err(|()| DataFusionError::Plan(format!("COPY: '{}' has no path", url.as_str())))?
            .clear()
            .extend(prefix.parts().map(|p| p.as_ref().to_string()))
            .push(&name)
            .extend(trailing.then_some(""));
        let staging = StoreStaging {
            store,
            base,
            target,
            prefix,
        };
        Ok(Some((Staging::Store(staging), staged.to_string())))
    }

    /// Makes the staging directory of a local target; returns it and the
    /// rewritten target.
    fn local(target: &Path, trailing: bool) -> Result<(Self, String)> {
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| n != "..")
            .ok_or_else(|| {
                DataFusionError::Plan(format!(
                    "COPY: '{}' names no file or directory",
                    target.display()
                ))
            })?;
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut made_parents = Vec::new();
        let mut missing = Vec::new();
        let mut up = parent.as_path();
        while !up.exists() {
            missing.push(up.to_path_buf());
            match up.parent() {
                Some(p) if !p.as_os_str().is_empty() => up = p,
                _ => break,
            }
        }
        for dir in missing.into_iter().rev() {
            match std::fs::create_dir(&dir) {
                Ok(()) => made_parents.push(dir),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    remove_empty_dirs(&made_parents);
                    return Err(io_error("cannot make the directory", &dir, e));
                }
            }
        }
        let dir = parent.join(staging_name(&name));
        if let Err(e) = std::fs::create_dir(&dir) {
            remove_empty_dirs(&made_parents);
            return Err(io_error("cannot make the staging directory", &dir, e));
        }
        // A file URL: DataFusion reads it as the path it encodes, never as
        // a pattern.
        let staged = dir.join(&name);
        let mut new_target = url::Url::from_file_path(&staged)
            .map_err(|()| {
                remove_empty_dirs(&made_parents);
                let _ = std::fs::remove_dir(&dir);
                DataFusionError::Plan(format!(
                    "COPY: '{}' is not an absolute path",
                    staged.display()
                ))
            })?
            .to_string();
        if trailing {
            new_target.push('/');
        }
        let staging = LocalStaging {
            target: target.to_path_buf(),
            dir,
            made_parents,
        };
        Ok((Staging::Local(staging), new_target))
    }

    /// Moves the completed output to the target and removes the staging
    /// location. An error names the file that could not be moved; what was
    /// not moved stays in the staging location, which the error names.
    pub async fn commit(self) -> Result<()> {
        match self {
            Staging::Local(s) => tokio::task::spawn_blocking(move || s.commit())
                .await
                .map_err(|e| DataFusionError::Execution(format!("COPY: {e}")))?,
            Staging::Store(s) => s.commit().await,
        }
    }

    /// Removes everything in the staging location (the output of a failed or
    /// cancelled query) and the directories made for it; returns what it
    /// removed. Nothing outside the staging location is touched.
    pub async fn abort(self) -> Vec<String> {
        match self {
            Staging::Local(s) => {
                // The writer's blocking tasks end soon after their query is
                // dropped; one of them may still be creating a file.
                let mut removed = s.remove();
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                removed.extend(s.remove());
                remove_empty_dirs(&s.made_parents);
                removed
            }
            Staging::Store(s) => s.abort().await,
        }
    }
}

/// Removes `dirs` (deepest last) where they are empty.
fn remove_empty_dirs(dirs: &[PathBuf]) {
    for dir in dirs.iter().rev() {
        // `remove_dir` refuses a directory that is not empty.
        let _ = std::fs::remove_dir(dir);
    }
}

/// The files below `dir`, as paths relative to it.
fn files_below(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        for entry in std::fs::read_dir(dir.join(&rel))? {
            let entry = entry?;
            let rel = rel.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                dirs.push(rel);
            } else {
                files.push(rel);
            }
        }
    }
    files.sort();
    Ok(files)
}

impl LocalStaging {
    fn commit(self) -> Result<()> {
        let name = self.dir.join(self.target.file_name().unwrap_or_default());
        let pause = commit_pause();
        if name.is_dir() {
            // A directory output: each file moved below the target, which
            // may already hold files (never replaced).
            let files = files_below(&name).map_err(|e| io_error("cannot list", &name, e))?;
            for rel in files {
                let from = name.join(&rel);
                let to = self.target.join(&rel);
                if let Some(parent) = to.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| io_error("cannot make the directory", parent, e))?;
                }
                if to.exists() {
                    return Err(DataFusionError::Execution(format!(
                        "COPY: '{}' exists and is not replaced; the new output is in '{}'",
                        to.display(),
                        self.dir.display()
                    )));
                }
                std::fs::rename(&from, &to).map_err(|e| {
                    io_error(
                        &format!(
                            "cannot move the output into place (from '{}')",
                            from.display()
                        ),
                        &to,
                        e,
                    )
                })?;
                if let Some(p) = pause {
                    std::thread::sleep(p);
                }
            }
        } else if name.exists() {
            std::fs::rename(&name, &self.target).map_err(|e| {
                io_error(
                    &format!(
                        "cannot move the output into place (from '{}')",
                        name.display()
                    ),
                    &self.target,
                    e,
                )
            })?;
        } else if self.target.to_string_lossy().ends_with('/') {
            // A directory target and a query that wrote no file.
            std::fs::create_dir_all(&self.target)
                .map_err(|e| io_error("cannot make the directory", &self.target, e))?;
        }
        std::fs::remove_dir_all(&self.dir)
            .map_err(|e| io_error("cannot remove the staging directory", &self.dir, e))
    }

    /// Removes the staging directory; returns the files it held.
    fn remove(&self) -> Vec<String> {
        let removed = files_below(&self.dir)
            .unwrap_or_default()
            .into_iter()
            .map(|rel| self.dir.join(rel).display().to_string())
            .collect();
        let _ = std::fs::remove_dir_all(&self.dir);
        removed
    }
}

impl StoreStaging {
    /// The objects under the staging prefix.
    async fn staged(&self) -> Result<Vec<StorePath>> {
        self.store
            .list(Some(&self.prefix))
            .map_ok(|meta| meta.location)
            .try_collect()
            .await
            .map_err(|e| store_error("cannot list", &format!("{}/{}", self.base, self.prefix), e))
    }

    async fn commit(self) -> Result<()> {
        let name = self.target.filename().unwrap_or_default().to_owned();
        let staged_name: StorePath = self
            .prefix
            .parts()
            .chain(std::iter::once(name.as_str().into()))
            .collect();
        let pause = commit_pause();
        for from in self.staged().await? {
            let Some(rest) = from.prefix_match(&staged_name) else {
                continue;
            };
            let rest: Vec<_> = rest.collect();
            // The single file the COPY wrote, or a file below its directory.
            let to = if rest.is_empty() {
                self.target.clone()
            } else {
                self.target.parts().chain(rest).collect()
            };
            if self.store.head(&to).await.is_ok() && to != self.target {
                return Err(DataFusionError::Execution(format!(
                    "COPY: '{}/{to}' exists and is not replaced; the new output is under '{}/{}'",
                    self.base, self.base, self.prefix
                )));
            }
            self.store.rename(&from, &to).await.map_err(|e| {
                store_error(
                    "cannot move the output into place",
                    &format!("{}/{to}", self.base),
                    e,
                )
            })?;
            if let Some(p) = pause {
                tokio::time::sleep(p).await;
            }
        }
        Ok(())
    }

    async fn abort(self) -> Vec<String> {
        let mut removed = Vec::new();
        for _ in 0..2 {
            for path in self.staged().await.unwrap_or_default() {
                if self.store.delete(&path).await.is_ok() {
                    removed.push(format!("{}/{path}", self.base));
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        removed
    }
}

/// A pause after each file moved into place, for tests that press Ctrl-C
/// during the move (`KENDALL_TEST_COPY_COMMIT_PAUSE_MS`); none otherwise.
fn commit_pause() -> Option<std::time::Duration> {
    std::env::var("KENDALL_TEST_COPY_COMMIT_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map(std::time::Duration::from_millis)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::object_store::PutPayload;
    use datafusion::object_store::memory::InMemory;

    fn copy(target: &str) -> DFStatement {
        datafusion::sql::parser::DFParser::parse_sql(&format!("COPY (SELECT 1) TO '{target}'"))
            .unwrap()
            .pop_front()
            .unwrap()
    }

    fn target_of(statement: &DFStatement) -> String {
        match statement {
            DFStatement::CopyTo(copy) => copy.target.clone(),
            _ => unreachable!("a COPY statement"),
        }
    }

    /// The local path a staged target (a file URL) names.
    fn local_target(statement: &DFStatement) -> PathBuf {
        let target = target_of(statement);
        let mut path = url::Url::parse(&target)
            .unwrap()
            .to_file_path()
            .unwrap()
            .display()
            .to_string();
        if target.ends_with('/') && !path.ends_with('/') {
            path.push('/');
        }
        PathBuf::from(path)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn a_local_file_target_is_replaced_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("net.csv");
        std::fs::write(&target, "yesterday").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "precious").unwrap();
        let ctx = SessionContext::new();

        // Aborted: the staging directory goes, everything else stays.
        let mut statement = copy(&target.display().to_string());
        let staging = Staging::begin(&mut statement, &ctx).await.unwrap().unwrap();
        let staged = local_target(&statement);
        assert_eq!(staged.file_name().unwrap(), "net.csv");
        let staging_dir = staged.parent().unwrap().to_path_buf();
        assert_eq!(staging_dir.parent().unwrap(), dir.path());
        std::fs::write(&staged, "partial").unwrap();
        std::fs::write(staging_dir.join("net.csv#1"), "partial").unwrap();
        let removed = staging.abort().await;
        assert_eq!(removed.len(), 2, "{removed:?}");
        assert_eq!(names(dir.path()), ["net.csv", "notes.txt"]);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "yesterday");

        // Committed: the new file replaces the old in one rename.
        let mut statement = copy(&target.display().to_string());
        let staging = Staging::begin(&mut statement, &ctx).await.unwrap().unwrap();
        std::fs::write(local_target(&statement), "today").unwrap();
        staging.commit().await.unwrap();
        assert_eq!(names(dir.path()), ["net.csv", "notes.txt"]);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "today");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
            "precious"
        );
    }

    #[tokio::test]
    async fn a_local_directory_target_gains_files_and_loses_none() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("new/deeper/out");
        let ctx = SessionContext::new();

        // Missing parents are made, and removed again on abort.
        let mut statement = copy(&format!("{}/", out.display()));
        let staging = Staging::begin(&mut statement, &ctx).await.unwrap().unwrap();
        assert!(target_of(&statement).ends_with("/out/"));
        assert!(dir.path().join("new/deeper").is_dir());
        staging.abort().await;
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));

        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("notes.txt"), "precious").unwrap();
        let mut statement = copy(&format!("{}/", out.display()));
        let staging = Staging::begin(&mut statement, &ctx).await.unwrap().unwrap();
        let staged = local_target(&statement);
        std::fs::create_dir_all(staged.join("k=1")).unwrap();
        std::fs::write(staged.join("a_0.parquet"), "a").unwrap();
        std::fs::write(staged.join("k=1/b_0.parquet"), "b").unwrap();
        staging.commit().await.unwrap();
        assert_eq!(names(&out), ["a_0.parquet", "k=1", "notes.txt"]);
        assert_eq!(
            std::fs::read_to_string(out.join("k=1/b_0.parquet")).unwrap(),
            "b"
        );
        assert_eq!(names(out.parent().unwrap()), ["out"]);

        // A file of the output whose name exists is not replaced.
        let mut statement = copy(&format!("{}/", out.display()));
        let staging = Staging::begin(&mut statement, &ctx).await.unwrap().unwrap();
        let staged = local_target(&statement);
        std::fs::create_dir_all(&staged).unwrap();
        std::fs::write(staged.join("notes.txt"), "new").unwrap();
        let e = staging.commit().await.unwrap_err().to_string();
        assert!(e.contains("notes.txt' exists and is not replaced"), "{e}");
        assert_eq!(
            std::fs::read_to_string(out.join("notes.txt")).unwrap(),
            "precious"
        );
    }

    #[tokio::test]
    async fn other_statements_and_bad_targets() {
        let ctx = SessionContext::new();
        let mut select = datafusion::sql::parser::DFParser::parse_sql("SELECT 1")
            .unwrap()
            .pop_front()
            .unwrap();
        assert!(Staging::begin(&mut select, &ctx).await.unwrap().is_none());
        let e = Staging::begin(&mut copy(".."), &ctx).await.unwrap_err();
        assert!(e.to_string().contains("'..' names no file"), "{e}");
        // A scheme without a store: DataFusion's own error follows.
        let mut statement = copy("nostore://b/net.csv");
        assert!(
            Staging::begin(&mut statement, &ctx)
                .await
                .unwrap()
                .is_none()
        );
        assert_eq!(target_of(&statement), "nostore://b/net.csv");
    }

    /// Case: `file:/tmp/net.csv` (one slash) is the file `/tmp/net.csv`, as
    /// DataFusion resolves it, not a relative path `./file:/tmp/net.csv`;
    /// so are `file:///`, percent escapes and `..` in a relative path.
    #[tokio::test]
    async fn file_urls_are_resolved_as_datafusion_resolves_them() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display().to_string();
        let ctx = SessionContext::new();
        for (target, file) in [
            (format!("file:{d}/net.csv"), "net.csv"),
            (format!("file://{d}/net.csv"), "net.csv"),
            (format!("file:{d}/a%20b.csv"), "a b.csv"),
            (format!("{d}/sub/../net2.csv"), "net2.csv"),
        ] {
            let mut statement = copy(&target);
            let staging = Staging::begin(&mut statement, &ctx).await.unwrap().unwrap();
            let staged = local_target(&statement);
            assert_eq!(staged.file_name().unwrap(), file, "{target}");
            std::fs::write(&staged, "rows").unwrap();
            staging.commit().await.unwrap();
            assert_eq!(
                std::fs::read_to_string(dir.path().join(file)).unwrap(),
                "rows",
                "{target}"
            );
        }
        assert!(!Path::new("file:").exists(), "a ./file: directory was made");
        assert_eq!(names(dir.path()), ["a b.csv", "net.csv", "net2.csv"]);
        // What DataFusion would not write where it says is refused.
        for (target, says) in [
            (format!("{d}/net[1].csv"), "glob character"),
            (format!("{d}/*.csv"), "glob character"),
            (format!("file://elsewhere{d}/net.csv"), "names a host"),
        ] {
            let e = Staging::begin(&mut copy(&target), &ctx).await.unwrap_err();
            assert!(e.to_string().contains(says), "{target}: {e}");
        }
        assert_eq!(names(dir.path()), ["a b.csv", "net.csv", "net2.csv"]);
    }

    #[tokio::test]
    async fn a_store_target_is_staged_under_a_sibling_prefix() {
        let store = Arc::new(InMemory::new());
        let ctx = SessionContext::new();
        ctx.register_object_store(&url::Url::parse("s3://lab").unwrap(), store.clone());
        let put = |path: &str, bytes: &'static str| {
            let store = store.clone();
            let path = StorePath::from(path);
            async move {
                store
                    .put(&path, PutPayload::from_static(bytes.as_bytes()))
                    .await
                    .unwrap()
            }
        };
        let get = |path: &str| {
            let store = store.clone();
            let path = StorePath::from(path);
            async move {
                let bytes = store.get(&path).await.unwrap().bytes().await.unwrap();
                String::from_utf8(bytes.to_vec()).unwrap()
            }
        };
        let list = || {
            let store = store.clone();
            async move {
                let mut all: Vec<String> = store
                    .list(None)
                    .map_ok(|m| m.location.to_string())
                    .try_collect()
                    .await
                    .unwrap();
                all.sort();
                all
            }
        };
        put("net/old.csv", "yesterday").await;

        // A file target: aborted, then committed over the old one.
        let mut statement = copy("s3://lab/net/old.csv");
        let staging = Staging::begin(&mut statement, &ctx).await.unwrap().unwrap();
        let staged = target_of(&statement);
        let staged = staged.strip_prefix("s3://lab/").unwrap().to_owned();
        assert!(staged.starts_with("net/.old.csv.kendall-copy-"), "{staged}");
        assert!(staged.ends_with("/old.csv"), "{staged}");
        put(&staged, "partial").await;
        assert_eq!(staging.abort().await.len(), 1);
        assert_eq!(list().await, ["net/old.csv"]);
        assert_eq!(get("net/old.csv").await, "yesterday");
        let mut statement = copy("s3://lab/net/old.csv");
        let staging = Staging::begin(&mut statement, &ctx).await.unwrap().unwrap();
        put(
            target_of(&statement).strip_prefix("s3://lab/").unwrap(),
            "today",
        )
        .await;
        staging.commit().await.unwrap();
        assert_eq!(list().await, ["net/old.csv"]);
        assert_eq!(get("net/old.csv").await, "today");

        // A directory target: files moved below it.
        let mut statement = copy("s3://lab/net/");
        let staging = Staging::begin(&mut statement, &ctx).await.unwrap().unwrap();
        let staged = target_of(&statement);
        assert!(staged.ends_with("/net/"), "{staged}");
        let staged = staged.strip_prefix("s3://lab/").unwrap().to_owned();
        put(&format!("{staged}a_0.parquet"), "a").await;
        put(&format!("{staged}k=1/b_0.parquet"), "b").await;
        staging.commit().await.unwrap();
        assert_eq!(
            list().await,
            ["net/a_0.parquet", "net/k=1/b_0.parquet", "net/old.csv"]
        );
    }
}
