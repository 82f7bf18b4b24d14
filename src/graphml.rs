//! GraphML export: `COPY (...) TO 'net.graphml'` (or `STORED AS GRAPHML`)
//! writes a query's rows as a network that Cytoscape, igraph, networkx and
//! Gephi open.
//!
//! ```sql
//! COPY (SELECT gene_i, gene_j, tau, p_value, q_value
//!       FROM kendall_all_pairs('expr.parquet') WHERE q_value < 0.01)
//! TO 'net.graphml' OPTIONS ('nodes' 'annotation', 'node_key' 'probe');
//! ```
//!
//! - **Edges**: one per row. The first two columns are its endpoints (any
//!   type, written as text); every other column is an edge attribute of the
//!   column's name (`tau`, `p_value`, `q_value`, `n`, ...), a `NULL` value
//!   leaving that attribute out of that edge.
//! - **Nodes**: every endpoint, in order of first appearance, with the
//!   attributes `name` (its id) and `degree` (its edges in the file), and,
//!   with `OPTIONS ('nodes' 'table')`, the other columns of that registered
//!   table or view, joined on its `node_key` column (default: its first).
//!   `'all_nodes' 'true'` also writes the node table's rows that have no
//!   edge (degree 0).
//! - **Streaming**: edges are written to a hidden file next to the target as
//!   they come, counting degrees; memory holds the node ids (and the node
//!   table), never the edges. The GraphML file is then assembled (keys,
//!   nodes, edges, nodes first as Cytoscape's reader wants) and renamed into
//!   place: an interrupted export leaves no partial file.
//!
//! [`GraphmlWriter`] is the same writer for a program's own batches (the R
//! and Python packages call it).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::Statistics;
use datafusion::common::file_options::file_type::GetExt;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::physical_plan::{
    FileScanConfig, FileSinkConfig, FileSource, JsonSource,
};
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::context::SessionState;
use datafusion::object_store::{ObjectMeta, ObjectStore};
use datafusion::physical_expr::LexRequirement;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, SendableRecordBatchStream, collect,
};
use futures::StreamExt;

/// The file extension (and `STORED AS` name) of the format.
pub const EXTENSION: &str = "graphml";

/// How a GraphML file is written: `COPY ... OPTIONS (...)` keys, or set
/// directly by a program.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphmlOptions {
    /// A registered table or view whose rows annotate the nodes (`'nodes'`).
    pub nodes: Option<String>,
    /// The node table's id column (`'node_key'`); default: its first column.
    pub node_key: Option<String>,
    /// `edgedefault="directed"` (`'directed' 'true'`); default undirected.
    pub directed: bool,
    /// Also write node-table rows without an edge (`'all_nodes' 'true'`).
    pub all_nodes: bool,
}

/// The option keys `COPY ... STORED AS GRAPHML OPTIONS (...)` accepts.
pub const OPTION_KEYS: [&str; 4] = ["nodes", "node_key", "directed", "all_nodes"];

impl GraphmlOptions {
    /// Reads `COPY` options (keys as DataFusion passes them, `format.nodes`
    /// for `'nodes'`); keys of other namespaces are DataFusion's own and are
    /// left alone. An unknown key or a bad value is an error naming it.
    pub fn from_copy_options(options: &HashMap<String, String>) -> Result<Self> {
        let mut out = Self::default();
        for (key, value) in options {
            let Some(name) = key.strip_prefix("format.") else {
                continue;
            };
            let flag = |v: &str| match v.trim().to_ascii_lowercase().as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(DataFusionError::Configuration(format!(
                    "GraphML option '{name}' must be 'true' or 'false', got '{v}'"
                ))),
            };
            match name {
                "nodes" => out.nodes = Some(value.clone()),
                "node_key" => out.node_key = Some(value.clone()),
                "directed" => out.directed = flag(value)?,
                "all_nodes" => out.all_nodes = flag(value)?,
                _ => {
                    return Err(DataFusionError::Configuration(format!(
                        "GraphML has no option '{name}'; its options are {}",
                        OPTION_KEYS.join(", ")
                    )));
                }
            }
        }
        if out.node_key.is_some() && out.nodes.is_none() {
            return Err(DataFusionError::Configuration(
                "GraphML option 'node_key' names a column of the 'nodes' table: give 'nodes' too"
                    .into(),
            ));
        }
        Ok(out)
    }
}

/// Registers GraphML for `COPY ... TO 'x.graphml'` / `STORED AS GRAPHML`.
#[derive(Debug, Default)]
pub struct GraphmlFormatFactory;

impl GetExt for GraphmlFormatFactory {
    fn get_ext(&self) -> String {
        EXTENSION.to_string()
    }
}

impl FileFormatFactory for GraphmlFormatFactory {
    fn create(
        &self,
        _state: &dyn Session,
        format_options: &HashMap<String, String>,
    ) -> Result<Arc<dyn FileFormat>> {
        Ok(Arc::new(GraphmlFormat {
            options: GraphmlOptions::from_copy_options(format_options)?,
        }))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(GraphmlFormat::default())
    }
}

/// The GraphML file format: written by `COPY`, never read.
#[derive(Debug, Default)]
pub struct GraphmlFormat {
    options: GraphmlOptions,
}

fn write_only<T>() -> Result<T> {
    Err(DataFusionError::NotImplemented(
        "GraphML is written (COPY ... TO 'net.graphml'), not read: read it with \
         igraph, networkx or Cytoscape"
            .into(),
    ))
}

#[async_trait]
impl FileFormat for GraphmlFormat {
    fn get_ext(&self) -> String {
        EXTENSION.to_string()
    }

    fn get_ext_with_compression(&self, c: &FileCompressionType) -> Result<String> {
        if c.is_compressed() {
            return Err(DataFusionError::Configuration(
                "GraphML is written uncompressed".into(),
            ));
        }
        Ok(EXTENSION.to_string())
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        None
    }

    async fn infer_schema(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        _objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        write_only()
    }

    async fn infer_stats(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        _table_schema: SchemaRef,
        _object: &ObjectMeta,
    ) -> Result<Statistics> {
        write_only()
    }

    async fn create_physical_plan(
        &self,
        _state: &dyn Session,
        _conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        write_only()
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !conf.table_partition_cols.is_empty() {
            return Err(DataFusionError::Plan(
                "GraphML is one file: COPY ... PARTITIONED BY cannot write it".into(),
            ));
        }
        let path = local_path(&conf.original_url)?;
        let nodes = match &self.options.nodes {
            Some(name) => Some(plan_node_table(state, name).await?),
            None => None,
        };
        let sink = GraphmlSink {
            path,
            options: self.options.clone(),
            schema: Arc::clone(&conf.output_schema),
            nodes,
        };
        check_edge_schema(&sink.schema)?;
        Ok(Arc::new(DataSinkExec::new(
            input,
            Arc::new(sink),
            order_requirements,
        )))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        // Never used: reading GraphML is refused before a scan is planned.
        Arc::new(JsonSource::new(table_schema))
    }
}

/// The local path of a `COPY` target: a plain path or a `file://` URL.
fn local_path(target: &str) -> Result<PathBuf> {
    let path = if let Some(rest) = target.strip_prefix("file://") {
        PathBuf::from(rest)
    } else if target.contains("://") {
        return Err(DataFusionError::Plan(format!(
            "GraphML is written to local files only, not to '{target}'"
        )));
    } else {
        PathBuf::from(target)
    };
    if target.ends_with('/') || path.file_name().is_none() {
        return Err(DataFusionError::Plan(format!(
            "GraphML is one file: give a file name such as 'net.graphml', not '{target}'"
        )));
    }
    Ok(path)
}

/// Plans the scan of the node table `name` (a table or view of the session).
async fn plan_node_table(state: &dyn Session, name: &str) -> Result<Arc<dyn ExecutionPlan>> {
    let Some(session) = state.as_any().downcast_ref::<SessionState>() else {
        return Err(DataFusionError::Plan(
            "GraphML option 'nodes' needs a DataFusion SessionState".into(),
        ));
    };
    let reference = datafusion::common::TableReference::from(name);
    let provider = session
        .schema_for_ref(reference.clone())?
        .table(reference.table())
        .await?
        .ok_or_else(|| {
            DataFusionError::Plan(format!(
                "GraphML option 'nodes': no table or view '{name}' is registered"
            ))
        })?;
    provider.scan(state, None, &[], None).await
}

/// The edge rows need two endpoint columns.
fn check_edge_schema(schema: &Schema) -> Result<()> {
    if schema.fields().len() < 2 {
        return Err(DataFusionError::Plan(format!(
            "GraphML edges need two columns (source, target) first, then any attributes; \
             the query gives {} column(s)",
            schema.fields().len()
        )));
    }
    Ok(())
}

/// Writes the edges of a `COPY` to a GraphML file.
#[derive(Debug)]
struct GraphmlSink {
    path: PathBuf,
    options: GraphmlOptions,
    schema: SchemaRef,
    nodes: Option<Arc<dyn ExecutionPlan>>,
}

impl DisplayAs for GraphmlSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GraphmlSink(path={})", self.path.display())
    }
}

#[async_trait]
impl DataSink for GraphmlSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let mut writer = GraphmlWriter::create(&self.path, &self.schema, self.options.clone())?;
        while let Some(batch) = data.next().await {
            writer.push_edges(&batch?)?;
        }
        let nodes = match &self.nodes {
            Some(plan) => Some(collect(Arc::clone(plan), Arc::clone(context)).await?),
            None => None,
        };
        writer.finish(nodes.as_deref())
    }
}

/// A GraphML attribute type (`attr.type`) for an Arrow type.
fn attr_type(t: &DataType) -> &'static str {
    match t {
        DataType::Float16 | DataType::Float32 | DataType::Float64 => "double",
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::UInt8 | DataType::UInt16 => {
            "int"
        }
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => "long",
        DataType::Boolean => "boolean",
        _ => "string",
    }
}

/// One column as GraphML text per row (`None`: null, attribute left out).
fn column_text(column: &ArrayRef) -> Result<Vec<Option<String>>> {
    let n = column.len();
    let mut out = Vec::with_capacity(n);
    match column.data_type() {
        DataType::Float64 => {
            let a = column.as_primitive::<Float64Type>();
            for i in 0..n {
                out.push(a.is_valid(i).then(|| format_double(a.value(i))));
            }
        }
        DataType::Float32 => {
            let a = column.as_primitive::<Float32Type>();
            for i in 0..n {
                out.push(a.is_valid(i).then(|| format_double(f64::from(a.value(i)))));
            }
        }
        DataType::Boolean => {
            let a = column.as_boolean();
            for i in 0..n {
                out.push(a.is_valid(i).then(|| a.value(i).to_string()));
            }
        }
        _ => {
            let text = cast(column, &DataType::Utf8)?;
            let a = text.as_string::<i32>();
            for i in 0..n {
                out.push(a.is_valid(i).then(|| escape(a.value(i))));
            }
        }
    }
    Ok(out)
}

/// A double as GraphML readers parse it (Python's `float`, C's `strtod`,
/// Java's `Double.parseDouble`): the shortest text that reads back to the
/// same bits, with an exponent for very small or large magnitudes.
pub fn format_double(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else if v == 0.0 || (1e-5..1e16).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// `s` escaped for XML text and attribute values; characters XML 1.0 does
/// not allow (control characters other than tab and newlines) become U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Distinct names for the temporary files of one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A hidden sibling of `path`: `dir/.net.graphml.<what>-PID-N`.
fn sibling(path: &Path, what: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.{what}-{}-{n}", std::process::id()))
}

/// Removes the temporary files it holds when dropped (an error, or a
/// cancelled export).
struct TempFiles(Vec<PathBuf>);

impl Drop for TempFiles {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> DataFusionError {
    DataFusionError::Execution(format!("GraphML: cannot {what} '{}': {e}", path.display()))
}

/// Writes a GraphML network batch by batch: [`GraphmlWriter::create`], then
/// [`GraphmlWriter::push_edges`] for each batch of edge rows, then
/// [`GraphmlWriter::finish`] with the node table's batches, if any. Memory
/// holds the node ids and degrees, never the edges.
pub struct GraphmlWriter {
    path: PathBuf,
    options: GraphmlOptions,
    /// Edge attribute columns: (position in the batch, key id).
    edge_keys: Vec<String>,
    edge_schema: SchemaRef,
    edges_path: PathBuf,
    edges: BufWriter<File>,
    node_index: HashMap<String, usize>,
    /// Node ids (escaped) in order of first appearance, and their degrees.
    node_ids: Vec<String>,
    degrees: Vec<u64>,
    edge_count: u64,
    temps: TempFiles,
}

impl GraphmlWriter {
    /// Starts a GraphML file at `path` for edge rows of `schema` (endpoints
    /// first, then attributes).
    pub fn create(path: &Path, schema: &Schema, options: GraphmlOptions) -> Result<Self> {
        check_edge_schema(schema)?;
        // As DataFusion's writers do: the target's directory is made if needed.
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| io_error("create the directory", dir, e))?;
        }
        let edges_path = sibling(path, "edges");
        let temps = TempFiles(vec![edges_path.clone()]);
        let file = File::create(&edges_path).map_err(|e| io_error("create", &edges_path, e))?;
        let edge_keys = (2..schema.fields().len())
            .map(|i| format!("e{}", i - 2))
            .collect();
        Ok(Self {
            path: path.to_path_buf(),
            options,
            edge_keys,
            edge_schema: Arc::new(schema.clone()),
            edges_path,
            edges: BufWriter::with_capacity(1 << 20, file),
            node_index: HashMap::new(),
            node_ids: Vec::new(),
            degrees: Vec::new(),
            edge_count: 0,
            temps,
        })
    }

    fn node(&mut self, id: String) -> usize {
        if let Some(&i) = self.node_index.get(&id) {
            return i;
        }
        let i = self.node_ids.len();
        self.node_index.insert(id.clone(), i);
        self.node_ids.push(id);
        self.degrees.push(0);
        i
    }

    /// Writes one batch of edge rows (the schema given to `create`).
    pub fn push_edges(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_columns() != self.edge_schema.fields().len() {
            return Err(DataFusionError::Execution(format!(
                "GraphML: a batch of {} columns where the edges have {}",
                batch.num_columns(),
                self.edge_schema.fields().len()
            )));
        }
        let source = column_text(batch.column(0))?;
        let target = column_text(batch.column(1))?;
        let attrs = (2..batch.num_columns())
            .map(|c| column_text(batch.column(c)))
            .collect::<Result<Vec<_>>>()?;
        let mut line = String::new();
        for row in 0..batch.num_rows() {
            let (Some(s), Some(t)) = (&source[row], &target[row]) else {
                return Err(DataFusionError::Execution(format!(
                    "GraphML: an edge with a NULL endpoint ({} or {} is NULL)",
                    self.edge_schema.field(0).name(),
                    self.edge_schema.field(1).name()
                )));
            };
            let si = self.node(s.clone());
            let ti = self.node(t.clone());
            self.degrees[si] += 1;
            self.degrees[ti] += 1;
            line.clear();
            let _ = write!(line, "    <edge source=\"{s}\" target=\"{t}\">");
            for (key, column) in self.edge_keys.iter().zip(&attrs) {
                if let Some(v) = &column[row] {
                    let _ = write!(line, "<data key=\"{key}\">{v}</data>");
                }
            }
            line.push_str("</edge>\n");
            self.edges
                .write_all(line.as_bytes())
                .map_err(|e| io_error("write", &self.edges_path, e))?;
            self.edge_count += 1;
        }
        Ok(())
    }

    /// Writes the GraphML file (keys, nodes, the edges written so far) and
    /// renames it into place; returns the number of edges. `nodes` are the
    /// node table's batches (see [`GraphmlOptions`]).
    pub fn finish(mut self, nodes: Option<&[RecordBatch]>) -> Result<u64> {
        self.edges
            .flush()
            .map_err(|e| io_error("write", &self.edges_path, e))?;
        let table = match nodes {
            Some(batches) => Some(NodeTable::new(batches, self.options.node_key.as_deref())?),
            None => None,
        };
        if self.options.all_nodes
            && let Some(table) = &table
        {
            for id in &table.ids {
                self.node(id.clone());
            }
        }
        let part = sibling(&self.path, "part");
        self.temps.0.push(part.clone());
        let file = File::create(&part).map_err(|e| io_error("create", &part, e))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let w = |out: &mut BufWriter<File>, s: &str| {
            out.write_all(s.as_bytes())
                .map_err(|e| io_error("write", &part, e))
        };
        w(
            &mut out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\" \
             xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
             xsi:schemaLocation=\"http://graphml.graphdrawing.org/xmlns \
             http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd\">\n",
        )?;
        // Node keys: name (unless the node table has its own), degree, then
        // the node table's other columns.
        let own_name = table.as_ref().is_none_or(|t| !t.has_column("name"));
        let mut keys = String::new();
        if own_name {
            keys.push_str(
                "  <key id=\"name\" for=\"node\" attr.name=\"name\" attr.type=\"string\"/>\n",
            );
        }
        keys.push_str(
            "  <key id=\"degree\" for=\"node\" attr.name=\"degree\" attr.type=\"long\"/>\n",
        );
        if let Some(t) = &table {
            for (k, (name, ty)) in t.attributes.iter().enumerate() {
                let _ = writeln!(
                    keys,
                    "  <key id=\"n{k}\" for=\"node\" attr.name=\"{}\" attr.type=\"{ty}\"/>",
                    escape(name)
                );
            }
        }
        for (key, field) in self
            .edge_keys
            .iter()
            .zip(self.edge_schema.fields().iter().skip(2))
        {
            let _ = writeln!(
                keys,
                "  <key id=\"{key}\" for=\"edge\" attr.name=\"{}\" attr.type=\"{}\"/>",
                escape(field.name()),
                attr_type(field.data_type())
            );
        }
        w(&mut out, &keys)?;
        let direction = if self.options.directed {
            "directed"
        } else {
            "undirected"
        };
        w(
            &mut out,
            &format!("  <graph id=\"G\" edgedefault=\"{direction}\">\n"),
        )?;
        let mut line = String::new();
        for (id, degree) in self.node_ids.iter().zip(&self.degrees) {
            line.clear();
            let _ = write!(line, "    <node id=\"{id}\">");
            if own_name {
                let _ = write!(line, "<data key=\"name\">{id}</data>");
            }
            let _ = write!(line, "<data key=\"degree\">{degree}</data>");
            if let Some(t) = &table {
                t.write_attributes(id, &mut line);
            }
            line.push_str("</node>\n");
            w(&mut out, &line)?;
        }
        let mut edges =
            File::open(&self.edges_path).map_err(|e| io_error("read", &self.edges_path, e))?;
        std::io::copy(&mut edges, &mut out).map_err(|e| io_error("write", &part, e))?;
        w(&mut out, "  </graph>\n</graphml>\n")?;
        out.flush().map_err(|e| io_error("write", &part, e))?;
        drop(out);
        std::fs::rename(&part, &self.path).map_err(|e| io_error("write", &self.path, e))?;
        Ok(self.edge_count)
    }
}

/// The node table: its ids and, per id, its attribute values as text.
struct NodeTable {
    /// Node ids (escaped) in the table's order.
    ids: Vec<String>,
    /// Attribute columns: name and GraphML type.
    attributes: Vec<(String, &'static str)>,
    /// Per id, the attribute values (escaped; `None`: null).
    values: HashMap<String, Vec<Option<String>>>,
}

impl NodeTable {
    fn new(batches: &[RecordBatch], key: Option<&str>) -> Result<Self> {
        let Some(schema) = batches.first().map(|b| b.schema()) else {
            return Ok(Self {
                ids: Vec::new(),
                attributes: Vec::new(),
                values: HashMap::new(),
            });
        };
        let key_index = match key {
            Some(k) => schema.index_of(k).map_err(|_| {
                DataFusionError::Plan(format!(
                    "GraphML option 'node_key': the node table has no column '{k}'; it has {}",
                    schema
                        .fields()
                        .iter()
                        .map(|f| f.name().as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?,
            None => 0,
        };
        let mut attributes = Vec::new();
        for (i, f) in schema.fields().iter().enumerate() {
            if i == key_index {
                continue;
            }
            if f.name() == "degree" {
                return Err(DataFusionError::Plan(
                    "GraphML: the node table has a column 'degree', which the writer computes; \
                     rename it"
                        .into(),
                ));
            }
            attributes.push((f.name().clone(), attr_type(f.data_type())));
        }
        let mut ids = Vec::new();
        let mut values = HashMap::new();
        for batch in batches {
            let keys = column_text(batch.column(key_index))?;
            let columns = (0..batch.num_columns())
                .filter(|&c| c != key_index)
                .map(|c| column_text(batch.column(c)))
                .collect::<Result<Vec<_>>>()?;
            for (row, id) in keys.into_iter().enumerate() {
                let Some(id) = id else {
                    return Err(DataFusionError::Execution(
                        "GraphML: the node table has a NULL node id".into(),
                    ));
                };
                let row_values = columns.iter().map(|c| c[row].clone()).collect();
                if values.insert(id.clone(), row_values).is_some() {
                    return Err(DataFusionError::Execution(format!(
                        "GraphML: the node table has the node id '{id}' more than once"
                    )));
                }
                ids.push(id);
            }
        }
        Ok(Self {
            ids,
            attributes,
            values,
        })
    }

    fn has_column(&self, name: &str) -> bool {
        self.attributes.iter().any(|(n, _)| n == name)
    }

    fn write_attributes(&self, id: &str, line: &mut String) {
        if let Some(row) = self.values.get(id) {
            for (k, v) in row.iter().enumerate() {
                if let Some(v) = v {
                    let _ = write!(line, "<data key=\"n{k}\">{v}</data>");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Float64Array, Int64Array, StringArray};
    use datafusion::arrow::datatypes::Field;

    fn edges() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("gene_i", DataType::Utf8, false),
            Field::new("gene_j", DataType::Utf8, false),
            Field::new("tau", DataType::Float64, true),
            Field::new("n", DataType::Int64, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(vec!["A", "A", "B&C"])),
                Arc::new(StringArray::from(vec!["B&C", "D", "D"])),
                Arc::new(Float64Array::from(vec![Some(0.5), None, Some(-1e-7)])),
                Arc::new(Int64Array::from(vec![10, 9, 8])),
            ],
        )
        .unwrap()
    }

    #[test]
    fn writes_nodes_with_degrees_then_edges() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out").join("net.graphml");
        let batch = edges();
        let mut w =
            GraphmlWriter::create(&path, &batch.schema(), GraphmlOptions::default()).unwrap();
        w.push_edges(&batch).unwrap();
        assert_eq!(w.finish(None).unwrap(), 3);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("edgedefault=\"undirected\""), "{text}");
        assert!(text.contains(
            "<node id=\"A\"><data key=\"name\">A</data><data key=\"degree\">2</data></node>"
        ));
        assert!(text.contains("<node id=\"B&amp;C\">"), "{text}");
        assert!(text.contains("<edge source=\"A\" target=\"D\"><data key=\"e1\">9</data></edge>"));
        assert!(text.contains("<data key=\"e0\">-1e-7</data>"), "{text}");
        assert!(text.find("<node").unwrap() < text.find("<edge").unwrap());
        // Only the target remains (in the directory made for it): the
        // temporary files are gone.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("out")).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn node_table_annotates_and_all_nodes_adds_isolated_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("net.graphml");
        let batch = edges();
        let annotation = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("symbol", DataType::Utf8, true),
                Field::new("probe", DataType::Utf8, false),
            ])),
            vec![
                Arc::new(StringArray::from(vec![Some("TP53"), None, Some("MYC")])),
                Arc::new(StringArray::from(vec!["A", "D", "Z"])),
            ],
        )
        .unwrap();
        let options = GraphmlOptions {
            nodes: Some("annotation".into()),
            node_key: Some("probe".into()),
            all_nodes: true,
            ..GraphmlOptions::default()
        };
        let mut w = GraphmlWriter::create(&path, &batch.schema(), options).unwrap();
        w.push_edges(&batch).unwrap();
        w.finish(Some(&[annotation])).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("attr.name=\"symbol\""), "{text}");
        assert!(
            text.contains(
                "<node id=\"A\"><data key=\"name\">A</data><data key=\"degree\">2</data>\
             <data key=\"n0\">TP53</data></node>"
            ),
            "{text}"
        );
        assert!(text.contains(
            "<node id=\"D\"><data key=\"name\">D</data><data key=\"degree\">2</data></node>"
        ));
        assert!(text.contains(
            "<node id=\"Z\"><data key=\"name\">Z</data><data key=\"degree\">0</data>\
             <data key=\"n0\">MYC</data></node>"
        ));
    }

    #[test]
    fn options_and_targets_are_checked() {
        let mut o = HashMap::new();
        o.insert("format.directed".to_string(), "TRUE".to_string());
        o.insert(
            "execution.keep_partition_by_columns".to_string(),
            "x".to_string(),
        );
        assert!(GraphmlOptions::from_copy_options(&o).unwrap().directed);
        o.insert("format.colour".to_string(), "red".to_string());
        let e = GraphmlOptions::from_copy_options(&o)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no option 'colour'"), "{e}");
        let mut o = HashMap::new();
        o.insert("format.all_nodes".to_string(), "yes".to_string());
        let e = GraphmlOptions::from_copy_options(&o)
            .unwrap_err()
            .to_string();
        assert!(e.contains("'true' or 'false'"), "{e}");
        assert!(local_path("s3://b/net.graphml").is_err());
        assert!(local_path("out/").is_err());
        assert_eq!(
            local_path("file:///tmp/net.graphml").unwrap(),
            PathBuf::from("/tmp/net.graphml")
        );
    }

    #[test]
    fn doubles_and_text() {
        assert_eq!(format_double(0.25), "0.25");
        assert_eq!(format_double(1e-300), "1e-300");
        assert_eq!(format_double(f64::NAN), "NaN");
        assert_eq!(format_double(-0.0), "-0");
        assert_eq!("1e-300".parse::<f64>().unwrap(), 1e-300);
        assert_eq!(escape("a<b>\"c'\u{1}"), "a&lt;b&gt;&quot;c&apos;\u{FFFD}");
    }
}
