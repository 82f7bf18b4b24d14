//! Errors named after the table function the user called.
//!
//! The engine (inputs, memory, loads, kernels) raises its errors without a
//! function's name: the same code serves every table function. Where a
//! call's work begins — planning its scan, and running it — every error is
//! named once, after the function the query called ([`in_function`]).

use datafusion::error::DataFusionError;

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
}
