//! GraphML text: attribute types, column values as text, and the XML
//! escaping every id, attribute name and value goes through.

use std::borrow::Cow;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::error::{DataFusionError, Result};

/// A GraphML attribute type (`attr.type`) for an Arrow type.
pub(super) fn attr_type(t: &DataType) -> &'static str {
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

/// One column as text per row, not yet escaped (`None`: null, the
/// attribute left out).
pub(super) fn column_text(column: &ArrayRef) -> Result<Vec<Option<String>>> {
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
                out.push(a.is_valid(i).then(|| a.value(i).to_string()));
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

/// Whether XML 1.0 can hold `c` (its `Char` production): not the control
/// characters other than tab, line feed and carriage return, nor U+FFFE and
/// U+FFFF (Rust strings hold no surrogates).
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
        || c >= '\u{10000}'
}

/// `s` as the text of an XML attribute value or element: quick-xml escapes
/// `& < > " '`, and tab, line feed and carriage return become character
/// references, which parsers keep (a raw one would turn into a space in an
/// attribute, a carriage return into a line feed anywhere). `Err` holds the
/// first character XML 1.0 cannot hold.
pub(super) fn escape(s: &str) -> std::result::Result<Cow<'_, str>, char> {
    if let Some(c) = s.chars().find(|&c| !is_xml_char(c)) {
        return Err(c);
    }
    let escaped = quick_xml::escape::escape(s);
    if !escaped.contains(['\t', '\n', '\r']) {
        return Ok(escaped);
    }
    let mut out = String::with_capacity(escaped.len() + 8);
    for c in escaped.chars() {
        match c {
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
    Ok(Cow::Owned(out))
}

/// [`escape`], with an error that names where `s` comes from (`what`: "edge
/// row 3, column gene_i") when XML cannot hold it.
pub(super) fn escape_for<'a>(s: &'a str, what: impl FnOnce() -> String) -> Result<Cow<'a, str>> {
    escape(s).map_err(|c| {
        DataFusionError::Execution(format!(
            "GraphML: {} is {s:?}, which holds U+{:04X}, a character XML 1.0 cannot hold: \
             no GraphML reader would read it back, so nothing is written (replace it in \
             the query, e.g. with regexp_replace)",
            what(),
            c as u32
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_and_text() {
        assert_eq!(format_double(0.25), "0.25");
        assert_eq!(format_double(1e-300), "1e-300");
        assert_eq!(format_double(f64::NAN), "NaN");
        assert_eq!(format_double(-0.0), "-0");
        assert_eq!("1e-300".parse::<f64>().unwrap(), 1e-300);
        assert_eq!(escape("a<b>\"c'&").unwrap(), "a&lt;b&gt;&quot;c&apos;&amp;");
        assert_eq!(escape("G\t1\r\n").unwrap(), "G&#9;1&#13;&#10;");
        assert!(matches!(escape("G 1"), Ok(Cow::Borrowed("G 1"))));
        assert_eq!(escape("G\u{1}"), Err('\u{1}'));
        assert_eq!(escape("x\u{FFFE}"), Err('\u{FFFE}'));
        assert_eq!(
            escape("\u{7F}\u{85}\u{10FFFF}").unwrap(),
            "\u{7F}\u{85}\u{10FFFF}"
        );
        let e = escape_for("G\u{2}", || "edge row 2, column gene_i".into())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("edge row 2, column gene_i is \"G\\u{2}\""),
            "{e}"
        );
        assert!(e.contains("U+0002"), "{e}");
    }
}
