//! Errors named after the table function the user called.
//!
//! The engine (inputs, memory, loads, kernels) raises its errors without a
//! function's name: the same code serves every table function. Where a
//! call's work begins — planning its scan, and running it — every error is
//! named once, after the function the query called ([`in_function`]).
//!
//! The engine's errors are made here too: `plan_error` for what is found
//! while a query is planned, `data_error` for what is found in the data
//! as it is read, and `panicked` for a panic caught where a source is
//! read or a load runs.

use datafusion::error::DataFusionError;

/// An error found while planning (an input's schema, a source that cannot
/// be resolved); named after the table function the user called where the
/// call's work begins.
pub(crate) fn plan_error(msg: String) -> DataFusionError {
    DataFusionError::Plan(msg)
}

/// An error in an input's data, found while reading it; named after the
/// table function the user called where the call's work begins.
pub(crate) fn data_error(msg: String) -> DataFusionError {
    DataFusionError::Execution(msg)
}

/// What was running when a panic was caught (see [`panicked`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Panicked<'a> {
    /// Reading the sources named (`'a.parquet'`, `table 'expr'`): a reader
    /// of a corrupt file panicked.
    Reading(&'a str),
    /// A load, of the input named (`the input`, `an input`).
    Loading(&'a str),
    /// A computation, of what is named (`the listed pairs`).
    Computing(&'a str),
}

/// The message of a panic caught while `context` ran, with the text of its
/// `payload`; the caller makes it an error of the kind its stage raises
/// ([`plan_error`] while planning, [`data_error`] while loading).
pub(crate) fn panicked(context: Panicked<'_>, payload: &(dyn std::any::Any + Send)) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    match context {
        Panicked::Reading(sources) => {
            format!("cannot read {sources}: reading it panicked ({message}); is it a valid file?")
        }
        Panicked::Loading(input) => format!("loading {input} panicked: {message}"),
        Panicked::Computing(what) => format!("computing {what} panicked: {message}"),
    }
}

/// `e` as raised inside the table function `function`: its message begins
/// with the function's name. Errors of other kinds (Arrow, I/O, ...) are
/// left as they are, and so is a message already naming `function`.
pub fn in_function(function: &str, e: DataFusionError) -> DataFusionError {
    let named = |m: &str| match m.strip_prefix(function) {
        Some(rest) if rest.starts_with([':', '(']) => m.to_string(),
        _ => format!("{function}: {m}"),
    };
    match e {
        DataFusionError::Plan(m) => DataFusionError::Plan(named(&m)),
        DataFusionError::Execution(m) => DataFusionError::Execution(named(&m)),
        DataFusionError::ResourcesExhausted(m) => DataFusionError::ResourcesExhausted(named(&m)),
        // A load's outcome, shared by the partitions that waited for it.
        DataFusionError::Shared(shared) => match shared.as_ref() {
            DataFusionError::Plan(m) => DataFusionError::Plan(named(m)),
            DataFusionError::Execution(m) => DataFusionError::Execution(named(m)),
            DataFusionError::ResourcesExhausted(m) => DataFusionError::ResourcesExhausted(named(m)),
            _ => DataFusionError::Shared(shared),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_once_and_kind_kept() {
        let e = in_function("kendall_cross_pairs", DataFusionError::Plan("x".into()));
        assert!(matches!(&e, DataFusionError::Plan(m) if m == "kendall_cross_pairs: x"));
        let again = in_function("kendall_cross_pairs", e);
        assert!(matches!(&again, DataFusionError::Plan(m) if m == "kendall_cross_pairs: x"));
        let shared =
            DataFusionError::Shared(std::sync::Arc::new(DataFusionError::Execution("y".into())));
        let e = in_function("kendall_top_partners", shared);
        assert!(matches!(&e, DataFusionError::Execution(m) if m == "kendall_top_partners: y"));
    }

    #[test]
    fn panic_messages() {
        let payload: Box<dyn std::any::Any + Send> = Box::new("shift left");
        assert_eq!(
            panicked(Panicked::Reading("'a.parquet'"), &*payload),
            "cannot read 'a.parquet': reading it panicked (shift left); is it a valid file?"
        );
        let payload: Box<dyn std::any::Any + Send> = Box::new(String::from("out of bounds"));
        assert_eq!(
            panicked(Panicked::Loading("the input"), &*payload),
            "loading the input panicked: out of bounds"
        );
    }
}
