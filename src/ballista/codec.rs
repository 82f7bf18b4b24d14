//! The extension codecs that ship our table providers (client → scheduler)
//! and `KendallExec` plan nodes (scheduler → executors) as bytes.
//!
//! Each wraps Ballista's own codec and hands it whatever is not ours
//! (shuffle readers and writers, file formats, cache nodes), so Ballista's
//! plans still round-trip. Our bytes start with [`MAGIC`] and hold a small
//! protobuf message (prost): the table function's arguments for a provider;
//! for a plan node, the source's columns, the scan settings, the pushed-down
//! filters as DataFusion's protobuf expressions and the projection. The
//! input scans are the node's children, which DataFusion's codec encodes.
//!
//! What depends on the machine is not shipped but decided where the plan
//! runs: the instruction set (`kendall.simd` is resolved again on each
//! executor, so a plan from an AVX-512 scheduler runs on an AVX2 executor)
//! and the memory the executor's pool can grant.

use std::path::Path;
use std::sync::Arc;

use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, Extension, LogicalPlan, ScalarUDF, WindowUDF};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::bytes::{
    physical_plan_from_bytes_with_proto_converter, physical_plan_to_bytes_with_proto_converter,
};
use datafusion_proto::logical_plan::{
    DefaultLogicalExtensionCodec, LogicalExtensionCodec, from_proto, to_proto,
};
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use datafusion_proto::protobuf::LogicalExprNode;
use prost::Message;

use crate::exec::{KendallExec, ScanConfig};
use crate::functions::scan::predicates;
use crate::functions::{Call, KendallTable, function};
use crate::group_filter::GroupPredicate;
use crate::input::{Columns, GroupsSpec, InputSpec, PairListSpec};
use crate::kernel::KernelKind;
use crate::kernel::decision::{Decision, KernelPlan};
use crate::memory;
use crate::stats::pvalue::{Alternative, Continuity};

/// The first bytes of everything our codecs write (then a version byte).
pub const MAGIC: &[u8] = b"datafusion-kendall\x01";

/// The user-defined functions of a plan are Ballista's to encode: both
/// codecs hand them to the codec they wrap (`self.inner`).
macro_rules! functions_go_to_ballista {
    () => {
        fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
            self.inner.try_decode_udf(name, buf)
        }

        fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
            self.inner.try_encode_udf(node, buf)
        }

        fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> Result<Arc<AggregateUDF>> {
            self.inner.try_decode_udaf(name, buf)
        }

        fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> Result<()> {
            self.inner.try_encode_udaf(node, buf)
        }

        fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> Result<Arc<WindowUDF>> {
            self.inner.try_decode_udwf(name, buf)
        }

        fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> Result<()> {
            self.inner.try_encode_udwf(node, buf)
        }
    };
}

/// A table function call: what the client's provider stands for.
#[derive(Clone, PartialEq, Message)]
struct TableProto {
    /// The function's SQL name (one of [`crate::functions::FUNCTIONS`]).
    #[prost(string, tag = "1")]
    function: String,
    /// The source (two for cross pairs).
    #[prost(string, repeated, tag = "2")]
    sources: Vec<String>,
    /// Column names after the source (the left source's for cross pairs).
    #[prost(string, repeated, tag = "3")]
    names: Vec<String>,
    /// Cross pairs: the right source's gene column.
    #[prost(string, repeated, tag = "4")]
    right_names: Vec<String>,
    /// `kendall.gene_ids` as fixed at the call.
    #[prost(string, tag = "5")]
    gene_ids: String,
    /// Top partners: k.
    #[prost(uint64, tag = "6")]
    k: u64,
    /// `kendall.groups` at the call (grouped samples), when set.
    #[prost(string, optional, tag = "7")]
    groups: Option<String>,
}

/// An [`InputSpec`].
#[derive(Clone, PartialEq, Message)]
struct SpecProto {
    #[prost(string, tag = "1")]
    what: String,
    /// `genes_as_rows`, `genes_as_columns` or `long`.
    #[prost(string, tag = "2")]
    layout: String,
    /// Rows and long: the gene-id column.
    #[prost(string, tag = "3")]
    gene: String,
    /// Rows: the sample columns; columns: the gene columns.
    #[prost(string, repeated, tag = "4")]
    columns: Vec<String>,
    /// Long: the sample-id and value columns, and `kendall.absent`.
    #[prost(string, tag = "5")]
    sample: String,
    #[prost(string, tag = "6")]
    value: String,
    #[prost(string, tag = "7")]
    absent: String,
    #[prost(uint64, repeated, tag = "8")]
    projection: Vec<u64>,
    #[prost(uint64, optional, tag = "9")]
    genes: Option<u64>,
    #[prost(uint64, optional, tag = "10")]
    samples: Option<u64>,
    #[prost(string, tag = "11")]
    missing: String,
}

/// A [`ScanConfig`], enums as their option values.
#[derive(Clone, PartialEq, Message)]
struct ConfigProto {
    #[prost(string, tag = "1")]
    variant: String,
    #[prost(uint64, tag = "2")]
    min_periods: u64,
    #[prost(string, tag = "3")]
    kernel: String,
    #[prost(uint64, tag = "4")]
    option_limit: u64,
    #[prost(string, tag = "5")]
    simd: String,
    #[prost(uint64, optional, tag = "6")]
    anchors: Option<u64>,
    #[prost(string, tag = "7")]
    pvalue: String,
    #[prost(string, tag = "8")]
    fdr: String,
    #[prost(uint64, tag = "9")]
    tile_size: u64,
    #[prost(uint64, tag = "10")]
    partitions: u64,
    #[prost(uint64, tag = "11")]
    batch_size: u64,
    #[prost(message, repeated, tag = "12")]
    filters: Vec<LogicalExprNode>,
    #[prost(uint64, optional, tag = "13")]
    limit: Option<u64>,
    #[prost(uint64, optional, tag = "14")]
    top_k: Option<u64>,
    #[prost(string, tag = "15")]
    gene_ids: String,
    #[prost(bool, tag = "16")]
    cluster: bool,
    /// The function the query called.
    #[prost(string, tag = "17")]
    function: String,
    /// The kernel decided at planning time (`None` when the shape was not
    /// known then): its name, and whether `auto` may switch to the
    /// zero-inflated kernel.
    #[prost(string, optional, tag = "18")]
    planned_kernel: Option<String>,
    #[prost(bool, tag = "19")]
    zero_if_inflated: bool,
    /// `kendall.alternative` (empty from a client that predates it:
    /// two-sided).
    #[prost(string, tag = "20")]
    alternative: String,
    /// `kendall.continuity`.
    #[prost(bool, tag = "21")]
    continuity: bool,
    /// Grouped samples (`kendall.groups`): a leading `group` column.
    #[prost(bool, tag = "22")]
    grouped: bool,
    /// `kendall_candidate_taus`: the list's lines, in order.
    #[prost(bool, tag = "23")]
    in_list_order: bool,
}

/// A `KendallExec` node (its children, the input scans, travel apart).
#[derive(Clone, PartialEq, Message)]
struct ExecProto {
    #[prost(message, optional, tag = "1")]
    spec: Option<SpecProto>,
    #[prost(message, optional, tag = "2")]
    right: Option<SpecProto>,
    #[prost(message, optional, tag = "3")]
    config: Option<ConfigProto>,
    #[prost(uint64, repeated, tag = "4")]
    projection: Vec<u64>,
    /// Planned for a cluster: the input scans (DataFusion's protobuf
    /// plans), which are then not the node's children.
    #[prost(bytes = "vec", repeated, tag = "5")]
    inputs: Vec<Vec<u8>>,
    /// Candidate pairs: the list's source and id columns.
    #[prost(message, optional, tag = "6")]
    pair_list: Option<PairListProto>,
    /// Grouped samples: the groups source and its sample and group columns.
    #[prost(message, optional, tag = "7")]
    groups: Option<PairListProto>,
}

/// The candidate list of a `KendallExec` (`kendall_candidate_pairs`), or
/// its groups source (`kendall.groups`): a source and two columns.
#[derive(Clone, PartialEq, Message)]
struct PairListProto {
    #[prost(string, tag = "1")]
    what: String,
    #[prost(string, repeated, tag = "2")]
    columns: Vec<String>,
}

fn codec_error(what: &str, detail: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Internal(format!("datafusion-kendall codec: {what}: {detail}"))
}

/// Writes `MAGIC` and `message` to `buf`.
fn write(message: &impl Message, buf: &mut Vec<u8>) -> Result<()> {
    buf.extend_from_slice(MAGIC);
    message
        .encode(buf)
        .map_err(|e| codec_error("cannot encode", e))
}

/// Our message in `buf`, or `None` when `buf` is not ours.
fn read<M: Message + Default>(buf: &[u8], what: &str) -> Result<Option<M>> {
    match buf.strip_prefix(MAGIC) {
        Some(body) => M::decode(body)
            .map(Some)
            .map_err(|e| codec_error(&format!("cannot decode {what}"), e)),
        None => Ok(None),
    }
}

fn parse<T: std::str::FromStr<Err = DataFusionError>>(value: &str) -> Result<T> {
    value.parse()
}

fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// A local relative path made absolute, so that processes started in other
/// directories find it (a URL, an absolute path or a name that is no file
/// here, such as a table, is kept as it is).
fn absolute(source: &str) -> String {
    let path = Path::new(source);
    if source.contains("://") || path.is_absolute() || !path.exists() {
        return source.to_string();
    }
    std::path::absolute(path).map_or_else(|_| source.to_string(), |p| p.display().to_string())
}

/// The logical codec of clients and schedulers: our table providers, then
/// Ballista's.
#[derive(Debug, Default)]
pub struct KendallLogicalCodec {
    inner: BallistaLogicalExtensionCodec,
}

impl KendallLogicalCodec {
    fn encode_table(node: &dyn TableProvider) -> Option<TableProto> {
        let call = node.downcast_ref::<KendallTable>()?.call();
        let names = |i: usize| call.names.get(i).cloned().unwrap_or_default();
        Some(TableProto {
            function: call.function.to_string(),
            sources: call.sources.iter().map(|s| absolute(s)).collect(),
            names: names(0),
            right_names: names(1),
            gene_ids: call.gene_ids.to_string(),
            k: call.k.map_or(0, |k| k as u64),
            groups: call.groups.as_deref().map(absolute),
        })
    }

    fn decode_table(proto: TableProto) -> Result<Arc<dyn TableProvider>> {
        let function = function(&proto.function).ok_or_else(|| {
            codec_error("table", format!("unknown function '{}'", proto.function))
        })?;
        if proto.sources.is_empty() {
            return Err(codec_error(
                "table",
                format!("{} lacks a source", proto.function),
            ));
        }
        let mut names = vec![proto.names];
        if proto.sources.len() > 1 {
            names.push(proto.right_names);
        }
        let call = Call {
            function: function.name(),
            sources: proto.sources,
            names,
            k: (proto.k > 0).then(|| to_usize(proto.k)),
            gene_ids: match proto.gene_ids.as_str() {
                "" => crate::schema::GeneIds::default(),
                ids => parse(ids)?,
            },
            groups: proto.groups,
        };
        Ok(Arc::new(KendallTable::from_call(call)?))
    }
}

impl LogicalExtensionCodec for KendallLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> Result<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        match read::<TableProto>(buf, "a table function call")? {
            Some(proto) => Self::decode_table(proto),
            None => self
                .inner
                .try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        match Self::encode_table(node.as_ref()) {
            Some(proto) => write(&proto, buf),
            None => self.inner.try_encode_table_provider(table_ref, node, buf),
        }
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> Result<()> {
        self.inner.try_encode_file_format(buf, node)
    }

    functions_go_to_ballista!();
}

/// The physical codec of schedulers and executors: `KendallExec`, then
/// Ballista's nodes.
#[derive(Debug, Default)]
pub struct KendallPhysicalCodec {
    inner: BallistaPhysicalExtensionCodec,
}

fn encode_spec(spec: &InputSpec) -> SpecProto {
    let mut proto = SpecProto {
        what: spec.what.clone(),
        projection: spec.projection.iter().map(|&i| i as u64).collect(),
        genes: spec.genes.map(|g| g as u64),
        samples: spec.samples.map(|s| s as u64),
        missing: spec.missing.to_string(),
        ..SpecProto::default()
    };
    match &spec.columns {
        Columns::GenesAsRows { gene, samples } => {
            proto.layout = "genes_as_rows".into();
            proto.gene = gene.clone();
            proto.columns = samples.clone();
        }
        Columns::GenesAsColumns { genes } => {
            proto.layout = "genes_as_columns".into();
            proto.columns = genes.clone();
        }
        Columns::Long {
            gene,
            sample,
            value,
            absent,
        } => {
            proto.layout = "long".into();
            proto.gene = gene.clone();
            proto.sample = sample.clone();
            proto.value = value.clone();
            proto.absent = absent.to_string();
        }
    }
    proto
}

fn decode_spec(proto: SpecProto) -> Result<InputSpec> {
    let columns = match proto.layout.as_str() {
        "genes_as_rows" => Columns::GenesAsRows {
            gene: proto.gene,
            samples: proto.columns,
        },
        "genes_as_columns" => Columns::GenesAsColumns {
            genes: proto.columns,
        },
        "long" => Columns::Long {
            gene: proto.gene,
            sample: proto.sample,
            value: proto.value,
            absent: parse(&proto.absent)?,
        },
        other => return Err(codec_error("input", format!("unknown layout '{other}'"))),
    };
    Ok(InputSpec {
        what: proto.what,
        columns,
        projection: proto.projection.into_iter().map(to_usize).collect(),
        genes: proto.genes.map(to_usize),
        samples: proto.samples.map(to_usize),
        missing: parse(&proto.missing)?,
    })
}

fn encode_config(config: &ScanConfig) -> Result<ConfigProto> {
    let filters = to_proto::serialize_exprs(&config.filters, &DefaultLogicalExtensionCodec {})
        .map_err(|e| codec_error("cannot encode a pushed-down filter", e))?;
    let kernel = &config.kernel;
    Ok(ConfigProto {
        variant: config.variant.to_string(),
        min_periods: config.min_periods as u64,
        kernel: kernel.choice.to_string(),
        option_limit: kernel.option_limit,
        simd: kernel.simd.to_string(),
        anchors: kernel.anchors.map(|a| a as u64),
        pvalue: config.pvalue.to_string(),
        fdr: config.fdr.to_string(),
        tile_size: config.tile_size as u64,
        partitions: config.partitions as u64,
        batch_size: config.batch_size as u64,
        filters,
        limit: config.limit.map(|l| l as u64),
        top_k: config.top_k.map(|k| k as u64),
        gene_ids: config.gene_ids.to_string(),
        cluster: config.cluster,
        function: config.function.to_string(),
        planned_kernel: config.planned_kernel.map(|d| d.kind.to_string()),
        zero_if_inflated: config.planned_kernel.is_some_and(|d| d.zero_if_inflated),
        alternative: config.alternative.to_string(),
        continuity: config.continuity == Continuity::On,
        grouped: config.grouped,
        in_list_order: config.in_list_order,
    })
}

/// The settings of `proto` on this machine: `kendall.simd` resolved for this
/// CPU, the memory this process's pool can grant, the filters parsed with
/// this session's functions.
fn decode_config(proto: ConfigProto, ctx: &TaskContext) -> Result<ScanConfig> {
    let filters = from_proto::parse_exprs(&proto.filters, ctx, &DefaultLogicalExtensionCodec {})
        .map_err(|e| codec_error("cannot decode a pushed-down filter", e))?;
    let (predicate, gene_predicate) = predicates(&filters);
    let group_predicate = match proto.grouped {
        true => GroupPredicate::of(&filters).map(Arc::new),
        false => None,
    };
    let simd: crate::kernel::isa::SimdChoice = parse(&proto.simd)?;
    let kernel = KernelPlan {
        choice: parse(&proto.kernel)?,
        option_limit: proto.option_limit,
        pool_available: memory::pool_available(ctx.memory_pool()),
        simd,
        isa: simd.resolve()?,
        anchors: proto.anchors.map(to_usize),
    };
    // The decision made at planning travels as it was made.
    let planned_kernel = match &proto.planned_kernel {
        Some(kind) => Some(Decision {
            kind: KernelKind::named(kind)
                .ok_or_else(|| codec_error("KendallExec", format!("unknown kernel '{kind}'")))?,
            zero_if_inflated: proto.zero_if_inflated,
        }),
        None => None,
    };
    let function = function(&proto.function)
        .ok_or_else(|| {
            codec_error(
                "KendallExec",
                format!("unknown function '{}'", proto.function),
            )
        })?
        .name();
    Ok(ScanConfig {
        function,
        variant: parse(&proto.variant)?,
        min_periods: to_usize(proto.min_periods),
        kernel,
        planned_kernel,
        pvalue: parse(&proto.pvalue)?,
        alternative: match proto.alternative.as_str() {
            "" => Alternative::default(),
            value => parse(value)?,
        },
        continuity: if proto.continuity {
            Continuity::On
        } else {
            Continuity::Off
        },
        fdr: parse(&proto.fdr)?,
        tile_size: to_usize(proto.tile_size).max(1),
        partitions: to_usize(proto.partitions).max(1),
        batch_size: to_usize(proto.batch_size).max(1),
        predicate: predicate.map(Arc::new),
        gene_predicate: gene_predicate.map(Arc::new),
        limit: proto.limit.map(to_usize),
        top_k: proto.top_k.map(to_usize),
        gene_ids: parse(&proto.gene_ids)?,
        filters,
        cluster: proto.cluster,
        grouped: proto.grouped,
        group_predicate,
        in_list_order: proto.in_list_order,
    })
}

impl KendallPhysicalCodec {
    fn encode_exec(
        &self,
        exec: &KendallExec,
        converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<ExecProto> {
        // Inputs that are not children travel inside the node.
        let inputs = if exec.config().cluster {
            exec.inputs()
                .into_iter()
                .map(|plan| {
                    physical_plan_to_bytes_with_proto_converter(Arc::clone(plan), self, converter)
                        .map(|b| b.to_vec())
                })
                .collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        Ok(ExecProto {
            spec: Some(encode_spec(exec.spec())),
            right: exec.right_spec().map(|s| encode_spec(s)),
            pair_list: exec.pair_list_spec().map(|l| PairListProto {
                what: l.what.clone(),
                columns: l.columns.to_vec(),
            }),
            groups: exec.groups_spec().map(|g| PairListProto {
                what: g.what.clone(),
                columns: g.columns.to_vec(),
            }),
            config: Some(encode_config(exec.config())?),
            projection: exec.projection().iter().map(|&i| i as u64).collect(),
            inputs,
        })
    }

    fn decode_exec(
        &self,
        proto: ExecProto,
        children: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let missing = |what: &str| codec_error("KendallExec", format!("no {what}"));
        let spec = decode_spec(proto.spec.ok_or_else(|| missing("input"))?)?;
        let config = decode_config(proto.config.ok_or_else(|| missing("settings"))?, ctx)?;
        let embedded: Vec<Arc<dyn ExecutionPlan>> = proto
            .inputs
            .iter()
            .map(|b| physical_plan_from_bytes_with_proto_converter(b, ctx, self, converter))
            .collect::<Result<_>>()?;
        // On a cluster the only child is the partition slices.
        let (inputs, slices) = if embedded.is_empty() {
            (children, None)
        } else {
            (embedded.as_slice(), children.first().cloned())
        };
        let wanted = 1
            + usize::from(proto.right.is_some())
            + usize::from(proto.pair_list.is_some())
            + usize::from(proto.groups.is_some());
        if inputs.len() != wanted {
            return Err(codec_error(
                "KendallExec",
                format!("{wanted} input plans expected, got {}", inputs.len()),
            ));
        }
        let projection = proto.projection.into_iter().map(to_usize).collect();
        let list_at = 1 + usize::from(proto.right.is_some());
        let exec =
            KendallExec::try_new(Arc::new(spec), Arc::clone(&inputs[0]), config, projection)?;
        let exec = match proto.right {
            Some(right) => exec.with_right(Arc::new(decode_spec(right)?), Arc::clone(&inputs[1])),
            None => exec,
        };
        let exec = match proto.pair_list {
            Some(list) => {
                let columns = <[String; 2]>::try_from(list.columns)
                    .map_err(|_| codec_error("KendallExec", "a candidate list of two columns"))?;
                let spec = PairListSpec {
                    what: list.what,
                    columns,
                };
                exec.with_pair_list(Arc::new(spec), Arc::clone(&inputs[list_at]))
            }
            None => exec,
        };
        let exec = match proto.groups {
            Some(groups) => {
                let columns = <[String; 2]>::try_from(groups.columns)
                    .map_err(|_| codec_error("KendallExec", "a groups source of two columns"))?;
                let spec = GroupsSpec {
                    what: groups.what,
                    columns,
                };
                exec.with_groups(Arc::new(spec), Arc::clone(&inputs[wanted - 1]))
            }
            None => exec,
        };
        Ok(Arc::new(match slices {
            Some(slices) => exec.with_slices(slices),
            None => exec,
        }))
    }
}

impl PhysicalExtensionCodec for KendallPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match read::<ExecProto>(buf, "a KendallExec plan")? {
            Some(proto) => self.decode_exec(proto, inputs, ctx, proto_converter),
            None => self.inner.try_decode(buf, inputs, ctx, proto_converter),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        match node.downcast_ref::<KendallExec>() {
            Some(exec) => write(&self.encode_exec(exec, proto_converter)?, buf),
            None => self.inner.try_encode(node, buf, proto_converter),
        }
    }

    functions_go_to_ballista!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::physical_plan::displayable;
    use datafusion::prelude::{SessionConfig, SessionContext};
    use datafusion_proto::bytes::{
        logical_plan_from_bytes_with_extension_codec, logical_plan_to_bytes_with_extension_codec,
        physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
    };

    const DEMO: &str = "data/demo_expression.parquet";

    fn ctx() -> SessionContext {
        let config = crate::with_kendall_options(SessionConfig::new().with_target_partitions(3));
        let ctx = SessionContext::new_with_config(config);
        crate::register(&ctx).unwrap();
        ctx
    }

    /// The `KendallExec` nodes of `plan`, depth first.
    fn kendall_nodes(plan: &Arc<dyn ExecutionPlan>) -> Vec<&KendallExec> {
        let mut found: Vec<&KendallExec> = plan.downcast_ref().into_iter().collect();
        for child in plan.children() {
            found.extend(kendall_nodes(child));
        }
        found
    }

    /// Plans `sql` after `settings`, sends its logical and physical plans
    /// through the codecs and checks that what comes back is the same plan.
    async fn round_trip(settings: &[&str], sql: &str) {
        round_trip_in(ctx(), settings, sql).await;
    }

    async fn round_trip_in(ctx: SessionContext, settings: &[&str], sql: &str) {
        for s in settings {
            ctx.sql(s).await.unwrap().collect().await.unwrap();
        }
        let df = ctx.sql(sql).await.unwrap();
        let task = ctx.task_ctx();

        let logical = df.logical_plan().clone();
        let bytes =
            logical_plan_to_bytes_with_extension_codec(&logical, &KendallLogicalCodec::default())
                .unwrap();
        let back = logical_plan_from_bytes_with_extension_codec(
            &bytes,
            &task,
            &KendallLogicalCodec::default(),
        )
        .unwrap();
        assert_eq!(
            format!("{}", logical.display_indent_schema()),
            format!("{}", back.display_indent_schema()),
            "logical plan of {sql} after {settings:?}"
        );

        let physical = df.create_physical_plan().await.unwrap();
        let bytes = physical_plan_to_bytes_with_extension_codec(
            Arc::clone(&physical),
            &KendallPhysicalCodec::default(),
        )
        .unwrap();
        let back = physical_plan_from_bytes_with_extension_codec(
            &bytes,
            &task,
            &KendallPhysicalCodec::default(),
        )
        .unwrap();
        let show = |p: &Arc<dyn ExecutionPlan>| displayable(p.as_ref()).indent(true).to_string();
        assert_eq!(show(&physical), show(&back), "{sql} after {settings:?}");
        let (before, after) = (kendall_nodes(&physical), kendall_nodes(&back));
        assert_eq!(before.len(), 1, "{sql}: one KendallExec");
        assert_eq!(after.len(), 1);
        let (a, b) = (before[0], after[0]);
        assert_eq!(
            format!("{:?}", a.config()),
            format!("{:?}", b.config()),
            "{sql} {settings:?}"
        );
        assert_eq!(a.spec(), b.spec());
        assert_eq!(a.right_spec(), b.right_spec());
        assert_eq!(a.pair_list_spec(), b.pair_list_spec());
        assert_eq!(a.projection(), b.projection());
        let inputs = |e: &KendallExec| e.inputs().iter().map(|p| show(p)).collect::<Vec<_>>();
        assert_eq!(inputs(a), inputs(b), "input scans of {sql}");
    }

    /// Planned for a cluster, the input scans are not children (see
    /// `KendallExec::children`) and travel inside the node's bytes.
    #[tokio::test]
    async fn cluster_plans_carry_their_inputs() {
        let config = super::super::session_config(SessionConfig::new().with_target_partitions(2));
        let cluster = SessionContext::new_with_config(config);
        crate::register(&cluster).unwrap();
        let sql =
            format!("SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{DEMO}') WHERE tau > 0.5");
        let plan = cluster
            .sql(&sql)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let exec = kendall_nodes(&plan)[0];
        assert!(exec.config().cluster);
        assert_eq!(exec.children().len(), 1, "the partition slices");
        assert_eq!(
            exec.config().partitions,
            2 * crate::functions::scan::CLUSTER_PARTITIONS_PER_TARGET
        );
        // What a task is sent of our node: its settings and the input's
        // description (the sample names dominate: 57 here) and scan.
        let bytes = physical_plan_to_bytes_with_extension_codec(
            Arc::clone(&plan),
            &KendallPhysicalCodec::default(),
        )
        .unwrap();
        println!("plan bytes, 2,000 genes x 57 samples: {}", bytes.len());
        assert!(bytes.len() < 16 << 10, "{} bytes", bytes.len());
        round_trip_in(cluster, &["SET kendall.partitions = 5"], &sql).await;
        let cluster =
            SessionContext::new_with_config(super::super::session_config(SessionConfig::new()));
        crate::register(&cluster).unwrap();
        round_trip_in(
            cluster,
            &[],
            "SELECT * FROM kendall_cross_pairs('tests/data/cross_left.csv', 'tests/data/cross_right.csv')",
        )
        .await;
        // Top partners and q-values merge state over all pairs: one task.
        let cluster =
            SessionContext::new_with_config(super::super::session_config(SessionConfig::new()));
        crate::register(&cluster).unwrap();
        for sql in [
            format!("SELECT * FROM kendall_top_partners('{DEMO}', 2)"),
            format!("SELECT gene_i, q_value FROM kendall_all_pairs('{DEMO}') WHERE q_value < 0.01"),
        ] {
            let plan = cluster
                .sql(&sql)
                .await
                .unwrap()
                .create_physical_plan()
                .await
                .unwrap();
            assert_eq!(kendall_nodes(&plan)[0].config().partitions, 1, "{sql}");
        }
    }

    #[tokio::test]
    async fn every_option_round_trips() {
        let pairs =
            format!("SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs('{DEMO}')");
        for settings in [
            vec![],
            vec!["SET kendall.variant = 'a'"],
            vec!["SET kendall.variant = 'c'", "SET kendall.min_periods = 40"],
            vec!["SET kendall.kernel = 'naive'"],
            vec!["SET kendall.kernel = 'gse'"],
            vec!["SET kendall.kernel = 'vse'", "SET kendall.simd = 'scalar'"],
            vec![
                "SET kendall.kernel = 'bitset'",
                "SET kendall.memory_limit = '1GiB'",
            ],
            vec!["SET kendall.kernel = 'zero'"],
            vec!["SET kendall.tile_size = 17", "SET kendall.partitions = 7"],
            vec![
                "SET kendall.pvalue = 'exact'",
                "SET kendall.missing = 'error'",
            ],
            vec![
                "SET kendall.pvalue = 'asymptotic'",
                "SET kendall.fdr = 'by'",
            ],
            vec!["SET kendall.gene_ids = 'dictionary'"],
            vec!["SET datafusion.execution.batch_size = 1000"],
            vec![
                "SET kendall.alternative = 'greater'",
                "SET kendall.continuity = true",
                "SET kendall.pvalue = 'asymptotic'",
            ],
            vec![
                "SET kendall.alternative = 'less'",
                "SET kendall.missing = 'complete'",
            ],
            vec!["SET kendall.missing = 'propagate'"],
        ] {
            round_trip(&settings, &pairs).await;
        }
    }

    #[tokio::test]
    async fn every_filter_shape_and_the_limit_round_trip() {
        let from = format!("FROM kendall_all_pairs('{DEMO}')");
        for filter in [
            "abs(tau) >= 0.8",
            "tau > 0.5 AND tau <= 0.9",
            "tau BETWEEN -0.5 AND 0.5",
            "tau < -0.7 OR tau > 0.7",
            "p_value < 1e-6",
            "q_value < 0.05 AND abs(tau) > 0.3",
            "gene_i = '1007_s_at'",
            "gene_i IN ('1007_s_at', '1053_at') OR gene_j = '117_at'",
            "gene_j <> '1007_s_at' AND NOT isnan(tau)",
        ] {
            round_trip(
                &[],
                &format!("SELECT gene_i, gene_j, tau {from} WHERE {filter}"),
            )
            .await;
        }
        round_trip(&[], &format!("SELECT * {from} LIMIT 10")).await;
        round_trip(&[], &format!("SELECT count(*) {from}")).await;
    }

    #[tokio::test]
    async fn every_table_function_and_layout_round_trips() {
        round_trip(
            &[],
            &format!("SELECT * FROM kendall_top_partners('{DEMO}', 3)"),
        )
        .await;
        round_trip(
            &[],
            "SELECT * FROM kendall_cross_pairs('tests/data/cross_left.csv', \
             'tests/data/cross_right.csv') WHERE abs(tau) > 0.2",
        )
        .await;
        round_trip(
            &[],
            "SELECT * FROM kendall_candidate_pairs('tests/data/candidates.csv', \
             'tests/data/cross_left.csv', 'tests/data/cross_right.csv') WHERE q_value < 0.5",
        )
        .await;
        round_trip(
            &["SET kendall.layout = 'long'", "SET kendall.absent = 'zero'"],
            "SELECT * FROM kendall_all_pairs('data/demo_long.parquet')",
        )
        .await;
        round_trip(
            &["SET kendall.layout = 'genes_as_columns'"],
            "SELECT * FROM kendall_all_pairs('data/demo_genes_as_columns.parquet')",
        )
        .await;
    }

    #[test]
    fn foreign_bytes_go_to_ballista_and_bad_ours_are_errors() {
        let ctx = ctx();
        let task = ctx.task_ctx();
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[0xff, 0xff, 0xff]);
        let err = KendallPhysicalCodec::default()
            .try_decode(
                &bytes,
                &[],
                &task,
                &datafusion_proto::physical_plan::DefaultPhysicalProtoConverter {},
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot decode a KendallExec plan"), "{err}");
        let proto = TableProto {
            function: "kendall_nothing".into(),
            sources: vec!["x".into()],
            ..TableProto::default()
        };
        let mut buf = Vec::new();
        write(&proto, &mut buf).unwrap();
        let schema = crate::schema::pair_schema(crate::schema::GeneIds::String);
        let err = KendallLogicalCodec::default()
            .try_decode_table_provider(&buf, &TableReference::bare("t"), schema, &task)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown function 'kendall_nothing'"), "{err}");
    }

    #[test]
    fn relative_paths_become_absolute_and_others_stay() {
        let abs = absolute(DEMO);
        assert!(
            Path::new(&abs).is_absolute() && abs.ends_with(DEMO),
            "{abs}"
        );
        for kept in [
            "s3://bucket/x.parquet",
            "/abs/x.parquet",
            "expr",
            "no/such/file.parquet",
        ] {
            assert_eq!(absolute(kept), kept);
        }
    }
}
