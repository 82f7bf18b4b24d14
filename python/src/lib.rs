//! `datafusion_kendall._native`: the table functions and `kendall.*` options
//! of datafusion-kendall as PyCapsules for the `datafusion` Python package,
//! which carries its own copy of DataFusion and takes extensions through
//! `datafusion-ffi`. The Python half (`datafusion_kendall/__init__.py`)
//! checks the host's DataFusion major version before any of this crosses.

use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_kendall::ffi;
use pyo3::exceptions::{PyImportError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// This library's tokio runtime: scans and streams run on it (the host's
/// runtime is another copy of tokio, invisible from here).
fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            datafusion_kendall::pace::runtime_builder()
                .thread_name("datafusion-kendall")
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| PyRuntimeError::new_err(format!("datafusion-kendall: no tokio runtime: {e}")))
}

/// One of the table functions, for `datafusion.udtf(function, name)`.
#[pyclass(module = "datafusion_kendall._native", frozen)]
struct TableFunction {
    name: String,
}

#[pymethods]
impl TableFunction {
    #[new]
    fn new(name: &str) -> PyResult<Self> {
        if ffi::table_functions().iter().any(|(n, _)| *n == name) {
            Ok(Self {
                name: name.to_string(),
            })
        } else {
            Err(PyValueError::new_err(format!(
                "datafusion-kendall has no table function '{name}'; it has {}",
                function_names().join(", ")
            )))
        }
    }

    /// The SQL name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The FFI table function, bound to the logical codec of `session`
    /// (the host's SessionContext).
    fn __datafusion_table_function__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let codec = logical_codec(session)?;
        let function = ffi::table_functions()
            .into_iter()
            .find(|(n, _)| *n == self.name)
            .map(|(_, f)| f)
            .ok_or_else(|| PyValueError::new_err(format!("no table function {}", self.name)))?;
        let ffi_function = ffi::ffi_table_function(function, runtime()?.handle().clone(), codec);
        PyCapsule::new_with_value(py, ffi_function, c"datafusion_table_function")
    }

    fn __repr__(&self) -> String {
        format!("TableFunction('{}')", self.name)
    }
}

/// A sparse matrix held in memory, as a table for
/// `SessionContext.register_table(name, ...)`: genes `genes` (their ids)
/// over samples `samples`, gene `g`'s stored values `data[indptr[g]:indptr[g + 1]]`
/// at sample positions `indices[indptr[g]:indptr[g + 1]]` (scipy's CSC form
/// of a cells x genes matrix). Each argument is an Arrow array
/// (`__arrow_c_array__`: pyarrow arrays of numpy arrays share their memory).
/// The Kendall table functions read it in place, as a 10x directory (long
/// layout, absent entries 0); see the Rust crate's `SparseTable`.
#[pyclass(module = "datafusion_kendall._native", frozen)]
struct SparseMatrix {
    table: datafusion_kendall::SparseTable,
}

#[pymethods]
impl SparseMatrix {
    #[new]
    fn new(
        genes: Bound<'_, PyAny>,
        samples: Bound<'_, PyAny>,
        indptr: Bound<'_, PyAny>,
        indices: Bound<'_, PyAny>,
        data: Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let table = datafusion_kendall::SparseTable::try_new(
            arrow_array(&genes, "genes")?.as_ref(),
            arrow_array(&samples, "samples")?.as_ref(),
            arrow_array(&indptr, "indptr")?.as_ref(),
            arrow_array(&indices, "indices")?.as_ref(),
            arrow_array(&data, "data")?.as_ref(),
        )
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(Self { table })
    }

    /// (genes, samples).
    #[getter]
    fn shape(&self) -> (usize, usize) {
        (self.table.genes(), self.table.samples())
    }

    /// The table as an FFI table provider bound to `session`'s logical codec.
    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let codec = logical_codec(session)?;
        let provider = datafusion_ffi::table_provider::FFI_TableProvider::new_with_ffi_codec(
            Arc::new(self.table.clone()),
            false,
            Some(runtime()?.handle().clone()),
            codec,
        );
        PyCapsule::new_with_value(py, provider, c"datafusion_table_provider")
    }

    fn __repr__(&self) -> String {
        format!(
            "SparseMatrix({} genes x {} samples, {} entries)",
            self.table.genes(),
            self.table.samples(),
            self.table.entries()
        )
    }
}

/// An Arrow array from an object with `__arrow_c_array__` (its buffers
/// shared, not copied); `what` names the argument in errors.
fn arrow_array(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<datafusion::arrow::array::ArrayRef> {
    use datafusion::arrow::ffi::{FFI_ArrowArray, FFI_ArrowSchema, from_ffi};
    if !obj.hasattr("__arrow_c_array__")? {
        return Err(PyValueError::new_err(format!(
            "{what} must be an Arrow array (with __arrow_c_array__, e.g. pyarrow.array(...))"
        )));
    }
    let pair = obj.call_method0("__arrow_c_array__")?;
    let (schema, array): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract()?;
    let not_capsule =
        |_| PyValueError::new_err(format!("{what}: __arrow_c_array__ did not return capsules"));
    let schema = schema.cast::<PyCapsule>().map_err(not_capsule)?;
    let array = array.cast::<PyCapsule>().map_err(not_capsule)?;
    let schema: NonNull<FFI_ArrowSchema> = schema.pointer_checked(Some(c"arrow_schema"))?.cast();
    let array: NonNull<FFI_ArrowArray> = array.pointer_checked(Some(c"arrow_array"))?.cast();
    // SAFETY: the capsules' names were checked: they hold an FFI schema and
    // array. The array is moved out (an empty, released one left behind,
    // which the capsule's destructor ignores), as the Arrow PyCapsule
    // protocol asks; the schema is only read.
    let data = unsafe {
        let array = std::ptr::replace(array.as_ptr(), FFI_ArrowArray::empty());
        from_ffi(array, schema.as_ref())
    }
    .map_err(|e| PyValueError::new_err(format!("{what}: not an Arrow array: {e}")))?;
    Ok(datafusion::arrow::array::make_array(data))
}

/// The `kendall.*` options, for `SessionConfig.with_extension(...)`.
#[pyclass(module = "datafusion_kendall._native", frozen)]
struct KendallConfig;

#[pymethods]
impl KendallConfig {
    #[new]
    fn new() -> Self {
        Self
    }

    fn __datafusion_extension_options__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        PyCapsule::new_with_value(
            py,
            ffi::extension_options(),
            c"datafusion_extension_options",
        )
    }
}

/// The host session's logical extension codec (what the FFI table function
/// decodes its arguments with).
fn logical_codec(session: Bound<'_, PyAny>) -> PyResult<FFI_LogicalExtensionCodec> {
    let attr = "__datafusion_logical_extension_codec__";
    let capsule = if session.hasattr(attr)? {
        session.getattr(attr)?.call0()?
    } else {
        session
    };
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
        PyValueError::new_err(
            "datafusion-kendall: expected a datafusion SessionContext (with \
             __datafusion_logical_extension_codec__)",
        )
    })?;
    let data: NonNull<FFI_LogicalExtensionCodec> = capsule
        .pointer_checked(Some(c"datafusion_logical_extension_codec"))?
        .cast();
    // SAFETY: the capsule's name was checked above; it holds the codec.
    Ok(unsafe { data.as_ref() }.clone())
}

/// The SQL names of the table functions.
#[pyfunction]
fn function_names() -> Vec<&'static str> {
    ffi::table_functions().into_iter().map(|(n, _)| n).collect()
}

/// The DataFusion major version this extension was built against.
#[pyfunction]
fn datafusion_major() -> u64 {
    ffi::datafusion_major()
}

/// Raises ImportError unless `host_version` (the `datafusion` package's
/// version) has our DataFusion major version.
#[pyfunction]
fn check_host(host_version: &str) -> PyResult<()> {
    ffi::check_host_major(host_version).map_err(|e| PyImportError::new_err(e.to_string()))
}

/// Pairs computed so far and pairs to compute (None while an input is still
/// loading) over every kendall scan of this process that is running or was
/// not yet dropped, or with `source` only over the scans of that source (as
/// the query named it: a registered table, or a location); None when there
/// is none. Queries running at once in other threads are summed in unless
/// `source` tells them apart.
#[pyfunction]
#[pyo3(signature = (source=None))]
fn progress(source: Option<&str>) -> Option<(u64, Option<u64>)> {
    match source {
        Some(source) => datafusion_kendall::exec::live_progress_of(source),
        None => datafusion_kendall::exec::live_progress(),
    }
    .map(|p| (p.done, p.total))
}

/// The record batches of an object with `__arrow_c_stream__` (a datafusion
/// DataFrame, a pyarrow Table, a pandas DataFrame), read as they come.
fn arrow_stream(
    data: &Bound<'_, PyAny>,
) -> PyResult<datafusion::arrow::ffi_stream::ArrowArrayStreamReader> {
    use datafusion::arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
    if !data.hasattr("__arrow_c_stream__")? {
        return Err(PyValueError::new_err(
            "expected a datafusion DataFrame, a pyarrow Table or another object with \
             __arrow_c_stream__",
        ));
    }
    let capsule = data.call_method0("__arrow_c_stream__")?;
    let capsule = capsule
        .cast::<PyCapsule>()
        .map_err(|_| PyValueError::new_err("__arrow_c_stream__ did not return a PyCapsule"))?;
    let stream: NonNull<FFI_ArrowArrayStream> =
        capsule.pointer_checked(Some(c"arrow_array_stream"))?.cast();
    // SAFETY: the capsule's name was checked: it holds an FFI_ArrowArrayStream,
    // which `from_raw` moves out (leaving a released stream behind, which the
    // capsule's destructor then ignores), as the Arrow PyCapsule protocol asks.
    unsafe { ArrowArrayStreamReader::from_raw(stream.as_ptr()) }
        .map_err(|e| PyValueError::new_err(format!("not an Arrow stream: {e}")))
}

/// Writes the rows of `edges` (two endpoint columns, then edge attributes)
/// to the GraphML file `path`, with node attributes from the rows of `nodes`
/// (joined on `node_key`, default its first column); returns the number of
/// edges. See the Rust crate's `graphml` module.
#[pyfunction]
#[pyo3(signature = (edges, path, nodes=None, node_key=None, directed=false, all_nodes=false))]
fn write_graphml(
    edges: Bound<'_, PyAny>,
    path: std::path::PathBuf,
    nodes: Option<Bound<'_, PyAny>>,
    node_key: Option<String>,
    directed: bool,
    all_nodes: bool,
) -> PyResult<u64> {
    use datafusion_kendall::graphml::{GraphmlOptions, GraphmlWriter};
    let error = |e: datafusion::error::DataFusionError| PyValueError::new_err(e.to_string());
    let options = GraphmlOptions {
        nodes: nodes.as_ref().map(|_| "nodes".to_string()),
        node_key,
        directed,
        all_nodes,
    };
    let node_batches = match &nodes {
        Some(n) => Some(
            arrow_stream(n)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| PyValueError::new_err(e.to_string()))?,
        ),
        None => None,
    };
    let reader = arrow_stream(&edges)?;
    let schema = datafusion::arrow::record_batch::RecordBatchReader::schema(&reader);
    let mut writer = GraphmlWriter::create(&path, &schema, options).map_err(error)?;
    for batch in reader {
        let batch = batch.map_err(|e| PyValueError::new_err(e.to_string()))?;
        writer.push_edges(&batch).map_err(error)?;
    }
    writer.finish(node_batches.as_deref()).map_err(error)
}

/// Kendall's tau of the listed pairs `(x feature first[k], y feature
/// second[k])` of two sparse matrices (cells matched by id), computed by the
/// engine of `kendall_candidate_pairs` straight into an array, without a
/// query: a `bytearray` of native-endian float64 values aligned with the
/// pairs (NaN where tau is undefined), for `numpy.frombuffer`. `first` and
/// `second` are Arrow uint32 arrays of positions; `variant` is `'a'`, `'b'`
/// or `'c'`; one thread per partition (None: one per core). Ctrl-C stops it within 100 ms
/// (KeyboardInterrupt). See the Rust crate's `exec::cross_listed_tau`.
#[pyfunction]
fn cross_listed_tau<'py>(
    py: Python<'py>,
    x: &SparseMatrix,
    y: &SparseMatrix,
    first: Bound<'py, PyAny>,
    second: Bound<'py, PyAny>,
    variant: &str,
    partitions: Option<usize>,
) -> PyResult<Bound<'py, pyo3::types::PyByteArray>> {
    use datafusion::arrow::array::{Array, UInt32Array};
    use datafusion::common::config::ConfigField;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc::{RecvTimeoutError, channel};

    let positions = |array: &Bound<'py, PyAny>, what: &str| -> PyResult<UInt32Array> {
        let array = arrow_array(array, what)?;
        match array.as_any().downcast_ref::<UInt32Array>() {
            Some(a) if a.null_count() == 0 => Ok(a.clone()),
            _ => Err(PyValueError::new_err(format!(
                "{what} must be an Arrow uint32 array without nulls, got {}",
                array.data_type()
            ))),
        }
    };
    let (first, second) = (positions(&first, "first")?, positions(&second, "second")?);
    let mut options = datafusion_kendall::KendallOptions::default();
    options
        .set("variant", variant)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let (x, y) = (x.table.clone(), y.table.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let (done, finished) = channel();
    let worker = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let taus = datafusion_kendall::exec::cross_listed_tau(
                &x,
                &y,
                (first.values(), second.values()),
                &options,
                partitions,
                &stop,
            );
            let _ = done.send(());
            taus
        })
    };
    // Waits without the GIL, looking for Ctrl-C every 100 ms (the
    // receiver, Send but not Sync, goes into the wait and comes back).
    let mut finished = finished;
    loop {
        let (back, waited) = py.detach(move || {
            let waited = finished.recv_timeout(std::time::Duration::from_millis(100));
            (finished, waited)
        });
        finished = back;
        match waited {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Err(interrupt) = py.check_signals() {
            stop.store(true, Ordering::Relaxed);
            let _ = py.detach(|| worker.join());
            return Err(interrupt);
        }
    }
    let taus = worker
        .join()
        .map_err(|_| PyRuntimeError::new_err("cross_listed_tau: the computation panicked"))?
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    pyo3::types::PyByteArray::new_with(py, taus.len() * 8, |bytes| {
        for (out, tau) in bytes.chunks_exact_mut(8).zip(&taus) {
            out.copy_from_slice(&tau.to_ne_bytes());
        }
        Ok(())
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TableFunction>()?;
    m.add_class::<KendallConfig>()?;
    m.add_class::<SparseMatrix>()?;
    m.add_function(wrap_pyfunction!(function_names, m)?)?;
    m.add_function(wrap_pyfunction!(datafusion_major, m)?)?;
    m.add_function(wrap_pyfunction!(check_host, m)?)?;
    m.add_function(wrap_pyfunction!(progress, m)?)?;
    m.add_function(wrap_pyfunction!(write_graphml, m)?)?;
    m.add_function(wrap_pyfunction!(cross_listed_tau, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
