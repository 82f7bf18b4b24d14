//! [`option_enum!`]: one declaration for each `kendall.*` option whose value
//! is one of a few words (`kendall.variant`, `kendall.layout`, ...).
//!
//! The macro writes the enum, its `Display` (the option's value), its
//! `FromStr` (case-insensitive, surrounding blanks ignored, with aliases)
//! whose error lists the valid values, and DataFusion's `ConfigField`, so
//! that the values are spelled once, beside the variants they stand for.

/// Declares an option enum: each variant `= "value"`, optionally
/// `| "alias"`s; the default variant carries `#[default]`.
///
/// ```ignore
/// option_enum! {
///     /// The multiple-testing adjustment of `q_value`.
///     pub enum FdrMethod: "kendall.fdr" {
///         /// Benjamini–Hochberg.
///         #[default]
///         Bh = "bh",
///         /// Benjamini–Yekutieli.
///         By = "by",
///     }
/// }
/// ```
macro_rules! option_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $key:literal {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $value:literal $(| $alias:literal)*
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// The option this enum is the value of.
            pub const OPTION: &'static str = $key;

            /// Every value the option takes (aliases aside), in order.
            pub const VALUES: &'static [&'static str] = &[$($value),+];

            /// The option's value that stands for `self`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $value, )+
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = ::datafusion::error::DataFusionError;

            fn from_str(s: &str) -> ::datafusion::error::Result<Self> {
                let s = s.trim().to_ascii_lowercase();
                $(
                    if s == $value $(|| s == $alias)* {
                        return Ok($name::$variant);
                    }
                )+
                Err(::datafusion::error::DataFusionError::Configuration(format!(
                    "{} must be {}, got '{s}'",
                    $name::OPTION,
                    $crate::option_enum::quoted($name::VALUES),
                )))
            }
        }

        impl ::datafusion::common::config::ConfigField for $name {
            fn visit<V: ::datafusion::common::config::Visit>(
                &self,
                v: &mut V,
                key: &str,
                description: &'static str,
            ) {
                v.some(key, self, description)
            }

            fn set(&mut self, _key: &str, value: &str) -> ::datafusion::error::Result<()> {
                *self = value.parse()?;
                Ok(())
            }

            fn reset(&mut self, _key: &str) -> ::datafusion::error::Result<()> {
                *self = <$name>::default();
                Ok(())
            }
        }
    };
}

pub(crate) use option_enum;

/// The values of an option for a message: `'a' or 'b'`, or `one of 'a',
/// 'b', 'c'` for more than two.
pub(crate) fn quoted(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("'{v}'")).collect();
    match quoted.as_slice() {
        [a, b] => format!("{a} or {b}"),
        _ => format!("one of {}", quoted.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    option_enum! {
        /// A test option.
        pub enum Colour: "kendall.colour" {
            /// Red.
            #[default]
            Red = "red" | "r",
            /// Green.
            Green = "green",
        }
    }

    #[test]
    fn values_aliases_and_errors() {
        assert_eq!(Colour::default(), Colour::Red);
        assert_eq!(" R ".parse::<Colour>().unwrap(), Colour::Red);
        assert_eq!("GREEN".parse::<Colour>().unwrap(), Colour::Green);
        assert_eq!(Colour::Green.to_string(), "green");
        let err = "blue".parse::<Colour>().unwrap_err().to_string();
        assert!(
            err.contains("kendall.colour must be 'red' or 'green', got 'blue'"),
            "{err}"
        );
    }
}
