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
//!   table or view, joined on its `node_key` column (default: its first). A
//!   `name` column of that table is the nodes' `name` (as text); an endpoint
//!   the table does not list is named by its id.
//!   `'all_nodes' 'true'` also writes the node table's rows that have no
//!   edge (degree 0).
//! - **Text**: ids, attribute names and values are escaped by quick-xml, and
//!   tab, line feed and carriage return become character references (`&#9;`,
//!   `&#10;`, `&#13;`), which XML parsers keep as they are: every id and value
//!   reads back unchanged in networkx, igraph and Cytoscape. A value holding a
//!   character XML 1.0 cannot hold (controls other than those three, U+FFFE,
//!   U+FFFF), and an empty node id (igraph cannot read one), are refused with
//!   the row named: nothing is written, never a changed id.
//! - **Streaming**: edges are written to a hidden file next to the target as
//!   they come, counting degrees; memory holds the node ids (and the node
//!   table), never the edges. The GraphML file is then assembled (keys,
//!   nodes, edges, nodes first as Cytoscape's reader wants) and renamed into
//!   place: an interrupted export leaves no partial file.
//!
//! [`GraphmlWriter`] is the same writer for a program's own batches (the R
//! and Python packages call it).

mod text;
mod writer;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
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

pub use text::format_double;
pub use writer::GraphmlWriter;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
