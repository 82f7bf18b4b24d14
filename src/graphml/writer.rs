//! [`GraphmlWriter`]: the GraphML file written batch by batch with
//! quick-xml, edges streamed to a hidden file, nodes assembled at the end.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::error::{DataFusionError, Result};
use quick_xml::Writer;
use quick_xml::events::attributes::Attribute;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::name::QName;

use super::text::{attr_type, column_text, escape_for};
use super::{GraphmlOptions, check_edge_schema};

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

/// An attribute whose value is already escaped ([`escape_for`]).
fn attribute<'a>(key: &'a str, escaped: &'a str) -> Attribute<'a> {
    Attribute {
        key: QName(key.as_bytes()),
        value: Cow::Borrowed(escaped.as_bytes()),
    }
}

/// One line `    <NAME ...><data key="k">v</data>...</NAME>` (`start`
/// names the element and holds its attributes; values already escaped).
fn element<'a, W: Write>(
    w: &mut Writer<W>,
    start: BytesStart<'_>,
    data: impl Iterator<Item = (&'a str, &'a str)>,
) -> std::io::Result<()> {
    let name = String::from_utf8_lossy(start.name().as_ref()).into_owned();
    w.get_mut().write_all(b"    ")?;
    w.write_event(Event::Start(start))?;
    for (key, escaped) in data {
        w.create_element("data")
            .with_attribute(("key", key))
            .write_text_content(BytesText::from_escaped(escaped))?;
    }
    w.write_event(Event::End(BytesEnd::new(name)))?;
    w.get_mut().write_all(b"\n")
}

/// `indent</name>` and a line end.
fn end<W: Write>(w: &mut Writer<W>, indent: &str, name: &str) -> std::io::Result<()> {
    w.get_mut().write_all(indent.as_bytes())?;
    w.write_event(Event::End(BytesEnd::new(name)))?;
    w.get_mut().write_all(b"\n")
}

/// A node id, escaped; an empty id is refused (igraph cannot read one).
fn node_id<'a>(id: &'a str, what: impl Fn() -> String) -> Result<Cow<'a, str>> {
    if id.is_empty() {
        return Err(DataFusionError::Execution(format!(
            "GraphML: {} is an empty string, which cannot be a node id (igraph refuses \
             it): nothing is written (filter it out, or give it a name, in the query)",
            what()
        )));
    }
    escape_for(id, what)
}

/// Writes a GraphML network batch by batch: [`GraphmlWriter::create`], then
/// [`GraphmlWriter::push_edges`] for each batch of edge rows, then
/// [`GraphmlWriter::finish`] with the node table's batches, if any. Memory
/// holds the node ids and degrees, never the edges.
///
/// Every id, attribute name and value goes through quick-xml's escaping,
/// with tab, line feed and carriage return as character references, so
/// that XML parsers read them back unchanged. A value with a character XML
/// 1.0 cannot hold, or an empty node id, is an error naming its row and
/// column (edge rows are counted from 1 over all batches).
pub struct GraphmlWriter {
    path: PathBuf,
    options: GraphmlOptions,
    /// Edge attribute key ids (`e0`, `e1`, ...), one per column after the
    /// endpoints.
    edge_keys: Vec<String>,
    edge_schema: SchemaRef,
    edges_path: PathBuf,
    edges: Writer<BufWriter<File>>,
    node_index: HashMap<String, usize>,
    /// Node ids (as given, not escaped) in order of first appearance, and
    /// their degrees.
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
        for field in schema.fields().iter().skip(2) {
            escape_for(field.name(), || "the edge column name".into())?;
        }
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
            edges: Writer::new(BufWriter::with_capacity(1 << 20, file)),
            node_index: HashMap::new(),
            node_ids: Vec::new(),
            degrees: Vec::new(),
            edge_count: 0,
            temps,
        })
    }

    fn node(&mut self, id: &str) -> usize {
        if let Some(&i) = self.node_index.get(id) {
            return i;
        }
        let i = self.node_ids.len();
        self.node_index.insert(id.to_string(), i);
        self.node_ids.push(id.to_string());
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
        let schema = Arc::clone(&self.edge_schema);
        let schema = &schema;
        for row in 0..batch.num_rows() {
            let number = self.edge_count + 1;
            let at =
                |c: usize| move || format!("edge row {number}, column {}", schema.field(c).name());
            let (Some(s), Some(t)) = (&source[row], &target[row]) else {
                return Err(DataFusionError::Execution(format!(
                    "GraphML: an edge with a NULL endpoint ({} or {} is NULL, edge row {number})",
                    schema.field(0).name(),
                    schema.field(1).name()
                )));
            };
            let (s_xml, t_xml) = (node_id(s, at(0))?, node_id(t, at(1))?);
            let mut start = BytesStart::new("edge");
            start.push_attribute(attribute("source", &s_xml));
            start.push_attribute(attribute("target", &t_xml));
            let values = attrs
                .iter()
                .enumerate()
                .map(|(c, column)| {
                    column[row]
                        .as_deref()
                        .map(|v| escape_for(v, at(c + 2)))
                        .transpose()
                })
                .collect::<Result<Vec<_>>>()?;
            let data = self.edge_keys.iter().zip(&values);
            element(
                &mut self.edges,
                start,
                data.filter_map(|(k, v)| Some((k.as_str(), v.as_deref()?))),
            )
            .map_err(|e| io_error("write", &self.edges_path, e))?;
            let si = self.node(s);
            let ti = self.node(t);
            self.degrees[si] += 1;
            self.degrees[ti] += 1;
            self.edge_count += 1;
        }
        Ok(())
    }

    /// Writes the GraphML file (keys, nodes, the edges written so far) and
    /// renames it into place; returns the number of edges. `nodes` are the
    /// node table's batches (see [`GraphmlOptions`]).
    pub fn finish(mut self, nodes: Option<&[RecordBatch]>) -> Result<u64> {
        self.edges
            .get_mut()
            .flush()
            .map_err(|e| io_error("write", &self.edges_path, e))?;
        let table = match nodes {
            Some(batches) => Some(NodeTable::new(batches, self.options.node_key.as_deref())?),
            None => None,
        };
        if self.options.all_nodes
            && let Some(table) = &table
        {
            for (id, row) in table.ids() {
                node_id(id, || format!("node table row {row}"))?;
                self.node(id);
            }
        }
        let part = sibling(&self.path, "part");
        self.temps.0.push(part.clone());
        let file = File::create(&part).map_err(|e| io_error("create", &part, e))?;
        let mut out = Writer::new(BufWriter::with_capacity(1 << 20, file));
        let io = |e| io_error("write", &part, e);
        self.write_head(&mut out, table.as_ref()).map_err(io)?;
        self.write_nodes(&mut out, table.as_ref(), &part)?;
        let mut edges =
            File::open(&self.edges_path).map_err(|e| io_error("read", &self.edges_path, e))?;
        std::io::copy(&mut edges, out.get_mut()).map_err(io)?;
        end(&mut out, "  ", "graph").map_err(io)?;
        end(&mut out, "", "graphml").map_err(io)?;
        out.get_mut().flush().map_err(io)?;
        drop(out);
        std::fs::rename(&part, &self.path).map_err(|e| io_error("write", &self.path, e))?;
        Ok(self.edge_count)
    }

    /// The XML declaration, `<graphml>`, the attribute keys and `<graph>`.
    fn write_head<W: Write>(
        &self,
        out: &mut Writer<W>,
        table: Option<&NodeTable>,
    ) -> std::io::Result<()> {
        out.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
        out.get_mut().write_all(b"\n")?;
        let graphml = BytesStart::new("graphml").with_attributes([
            ("xmlns", "http://graphml.graphdrawing.org/xmlns"),
            ("xmlns:xsi", "http://www.w3.org/2001/XMLSchema-instance"),
            (
                "xsi:schemaLocation",
                "http://graphml.graphdrawing.org/xmlns \
                 http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd",
            ),
        ]);
        out.write_event(Event::Start(graphml))?;
        out.get_mut().write_all(b"\n")?;
        // Node keys: name (unless the node table has its own), degree, then
        // the node table's other columns; then the edge keys. Names were
        // checked (create, NodeTable::new): escaping cannot fail here.
        let mut keys: Vec<(String, &str, String, &str)> = Vec::new();
        if table.is_none_or(|t| t.name_column.is_none()) {
            keys.push(("name".into(), "node", "name".into(), "string"));
        }
        keys.push(("degree".into(), "node", "degree".into(), "long"));
        let attributes = table.map_or(&[][..], |t| t.attributes.as_slice());
        for (k, (name, ty)) in attributes.iter().enumerate() {
            keys.push((format!("n{k}"), "node", name.clone(), *ty));
        }
        for (key, field) in self
            .edge_keys
            .iter()
            .zip(self.edge_schema.fields().iter().skip(2))
        {
            let ty = attr_type(field.data_type());
            keys.push((key.clone(), "edge", field.name().clone(), ty));
        }
        for (id, domain, name, ty) in &keys {
            let name = escape_for(name, String::new).map_err(std::io::Error::other)?;
            let mut key = BytesStart::new("key");
            key.push_attribute(("id", id.as_str()));
            key.push_attribute(("for", *domain));
            key.push_attribute(attribute("attr.name", &name));
            key.push_attribute(("attr.type", *ty));
            out.get_mut().write_all(b"  ")?;
            out.write_event(Event::Empty(key))?;
            out.get_mut().write_all(b"\n")?;
        }
        let direction = if self.options.directed {
            "directed"
        } else {
            "undirected"
        };
        let graph =
            BytesStart::new("graph").with_attributes([("id", "G"), ("edgedefault", direction)]);
        out.get_mut().write_all(b"  ")?;
        out.write_event(Event::Start(graph))?;
        out.get_mut().write_all(b"\n")
    }

    /// One `<node>` per id: its name, degree and the node table's values.
    fn write_nodes<W: Write>(
        &self,
        out: &mut Writer<W>,
        table: Option<&NodeTable>,
        part: &Path,
    ) -> Result<()> {
        let own_name = table.is_none_or(|t| t.name_column.is_none());
        for (id, degree) in self.node_ids.iter().zip(&self.degrees) {
            // Endpoints were checked as edges were pushed, table ids above.
            let xml = escape_for(id, String::new)?;
            let row = table.and_then(|t| t.values.get(id));
            let values = match (table, row) {
                (Some(t), Some((number, row))) => t.escaped(*number, row)?,
                _ => Vec::new(),
            };
            let mut start = BytesStart::new("node");
            start.push_attribute(attribute("id", &xml));
            let degree = degree.to_string();
            let mut data = Vec::with_capacity(values.len() + 2);
            if own_name {
                data.push(("name".to_string(), xml.as_ref()));
            }
            data.push(("degree".to_string(), degree.as_str()));
            match (table.and_then(|t| t.name_column), row) {
                // An endpoint the table does not list is named by its id.
                (Some(k), None) => data.push((format!("n{k}"), xml.as_ref())),
                _ => data.extend(
                    values
                        .iter()
                        .enumerate()
                        .filter_map(|(k, v)| Some((format!("n{k}"), v.as_deref()?))),
                ),
            }
            element(out, start, data.iter().map(|(k, v)| (k.as_str(), *v)))
                .map_err(|e| io_error("write", part, e))?;
        }
        Ok(())
    }
}

/// The node table: its ids and, per id, its attribute values as text.
struct NodeTable {
    /// Node ids in the table's order.
    order: Vec<String>,
    /// Attribute columns: name and GraphML type.
    attributes: Vec<(String, &'static str)>,
    /// Among them, the position of `name` (written as text).
    name_column: Option<usize>,
    /// Per id, its row number (from 1) and attribute values (`None`: null).
    values: HashMap<String, (usize, Vec<Option<String>>)>,
}

impl NodeTable {
    fn new(batches: &[RecordBatch], key: Option<&str>) -> Result<Self> {
        let Some(schema) = batches.first().map(|b| b.schema()) else {
            return Ok(Self {
                order: Vec::new(),
                attributes: Vec::new(),
                name_column: None,
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
            escape_for(f.name(), || "the node table's column name".into())?;
            let ty = if f.name() == "name" {
                "string"
            } else {
                attr_type(f.data_type())
            };
            attributes.push((f.name().clone(), ty));
        }
        let name_column = attributes.iter().position(|(n, _)| n == "name");
        let mut order = Vec::new();
        let mut values = HashMap::new();
        for batch in batches {
            let keys = column_text(batch.column(key_index))?;
            let columns = (0..batch.num_columns())
                .filter(|&c| c != key_index)
                .map(|c| column_text(batch.column(c)))
                .collect::<Result<Vec<_>>>()?;
            for (row, id) in keys.into_iter().enumerate() {
                let number = order.len() + 1;
                let Some(id) = id else {
                    return Err(DataFusionError::Execution(format!(
                        "GraphML: the node table has a NULL node id (row {number})"
                    )));
                };
                let row_values = columns.iter().map(|c| c[row].clone()).collect();
                if values.insert(id.clone(), (number, row_values)).is_some() {
                    return Err(DataFusionError::Execution(format!(
                        "GraphML: the node table has the node id {id:?} more than once \
                         (again at row {number})"
                    )));
                }
                order.push(id);
            }
        }
        Ok(Self {
            order,
            attributes,
            name_column,
            values,
        })
    }

    /// The ids in the table's order, with their row numbers.
    fn ids(&self) -> impl Iterator<Item = (&str, usize)> {
        self.order
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i + 1))
    }

    /// The values of row `number`, escaped.
    fn escaped<'a>(
        &self,
        number: usize,
        row: &'a [Option<String>],
    ) -> Result<Vec<Option<Cow<'a, str>>>> {
        row.iter()
            .zip(&self.attributes)
            .map(|(v, (name, _))| {
                v.as_deref()
                    .map(|v| escape_for(v, || format!("node table row {number}, column {name}")))
                    .transpose()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Float64Array, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field};

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

    fn pairs(source: Vec<&str>, target: Vec<&str>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("gene_i", DataType::Utf8, false),
            Field::new("gene_j", DataType::Utf8, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(source)),
                Arc::new(StringArray::from(target)),
            ],
        )
        .unwrap()
    }

    /// Issue case: `G<TAB>1` and `G 1` stay two nodes (the tab is written
    /// `&#9;`, which parsers keep), and quotes, `&<>` and line ends too.
    #[test]
    fn whitespace_and_markup_in_ids_stay_distinct() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("net.graphml");
        let batch = pairs(vec!["G\t1", "a\r\nb"], vec!["G 1", "<\"&'>"]);
        let mut w =
            GraphmlWriter::create(&path, &batch.schema(), GraphmlOptions::default()).unwrap();
        w.push_edges(&batch).unwrap();
        w.finish(None).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        for line in [
            "<node id=\"G&#9;1\"><data key=\"name\">G&#9;1</data>",
            "<node id=\"G 1\"><data key=\"name\">G 1</data>",
            "<node id=\"a&#13;&#10;b\">",
            "<edge source=\"a&#13;&#10;b\" target=\"&lt;&quot;&amp;&apos;&gt;\"></edge>",
        ] {
            assert!(text.contains(line), "{line} not in {text}");
        }
    }

    /// Issue case: `G\x01` and `G\x02` are refused naming the row, not
    /// merged into `G\u{FFFD}`; so is an empty id; nothing is left behind.
    #[test]
    fn unwritable_ids_and_values_are_refused_naming_the_row() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("net.graphml");
        let cases = [
            (
                pairs(vec!["A", "G\u{1}"], vec!["B", "G\u{2}"]),
                "edge row 2, column gene_i is \"G\\u{1}\"",
            ),
            (
                pairs(vec!["A", "B"], vec!["B", "\u{FFFF}"]),
                "edge row 2, column gene_j",
            ),
            (
                pairs(vec!["A", ""], vec!["B", "C"]),
                "edge row 2, column gene_i is an empty string",
            ),
        ];
        for (batch, needle) in cases {
            let mut w =
                GraphmlWriter::create(&path, &batch.schema(), GraphmlOptions::default()).unwrap();
            let e = w.push_edges(&batch).unwrap_err().to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
        let mut batch = edges();
        let mut w =
            GraphmlWriter::create(&path, &batch.schema(), GraphmlOptions::default()).unwrap();
        w.push_edges(&batch).unwrap();
        batch = RecordBatch::try_new(
            batch.schema(),
            vec![
                Arc::new(StringArray::from(vec!["X"])),
                Arc::new(StringArray::from(vec!["Y"])),
                Arc::new(Float64Array::from(vec![Some(0.5)])),
                Arc::new(Int64Array::from(vec![10])),
            ],
        )
        .unwrap();
        w.push_edges(&batch).unwrap();
        drop(w);
        // Rows count over batches; node table values name their row.
        let annotation = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("probe", DataType::Utf8, false),
                Field::new("symbol", DataType::Utf8, true),
            ])),
            vec![
                Arc::new(StringArray::from(vec!["Z", "A"])),
                Arc::new(StringArray::from(vec![Some("ok"), Some("bad\u{1b}")])),
            ],
        )
        .unwrap();
        let options = GraphmlOptions {
            nodes: Some("annotation".into()),
            ..GraphmlOptions::default()
        };
        let batch = edges();
        let mut w = GraphmlWriter::create(&path, &batch.schema(), options).unwrap();
        w.push_edges(&batch).unwrap();
        let e = w.finish(Some(&[annotation])).unwrap_err().to_string();
        assert!(e.contains("node table row 2, column symbol"), "{e}");
        assert!(e.contains("U+001B"), "{e}");
        let bad = Schema::new(vec![
            Field::new("a", DataType::Utf8, false),
            Field::new("b", DataType::Utf8, false),
            Field::new("w\u{0}", DataType::Utf8, false),
        ]);
        let e = GraphmlWriter::create(&path, &bad, GraphmlOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("the edge column name"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// Issue case: with a `name` column in the node table, an endpoint the
    /// table does not list is named by its id (not left blank).
    #[test]
    fn endpoints_missing_from_a_named_node_table_get_their_id_as_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("net.graphml");
        let annotation = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("probe", DataType::Utf8, false),
                Field::new("name", DataType::Int64, true),
            ])),
            vec![
                Arc::new(StringArray::from(vec!["A"])),
                Arc::new(Int64Array::from(vec![Some(53)])),
            ],
        )
        .unwrap();
        let options = GraphmlOptions {
            nodes: Some("annotation".into()),
            ..GraphmlOptions::default()
        };
        let batch = edges();
        let mut w = GraphmlWriter::create(&path, &batch.schema(), options).unwrap();
        w.push_edges(&batch).unwrap();
        w.finish(Some(&[annotation])).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        for line in [
            "<key id=\"n0\" for=\"node\" attr.name=\"name\" attr.type=\"string\"/>",
            "<node id=\"A\"><data key=\"degree\">2</data><data key=\"n0\">53</data></node>",
            "<node id=\"D\"><data key=\"degree\">2</data><data key=\"n0\">D</data></node>",
            "<node id=\"B&amp;C\"><data key=\"degree\">2</data><data key=\"n0\">B&amp;C</data></node>",
        ] {
            assert!(text.contains(line), "{line} not in {text}");
        }
        assert!(!text.contains("key id=\"name\""), "{text}");
    }
}
