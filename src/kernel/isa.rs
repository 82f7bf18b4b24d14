//! Instruction sets of the SIMD kernels, detected once per query.

use std::fmt;
use std::str::FromStr;

use datafusion::error::{DataFusionError, Result};

/// An instruction set a SIMD kernel can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// Portable Rust; the reference every other path must equal.
    Scalar,
    /// x86-64 AVX2 (and POPCNT).
    Avx2,
    /// x86-64 AVX-512 (F, BW, VL, VPOPCNTDQ).
    Avx512,
}

impl Isa {
    /// Every instruction set, best first.
    pub const ALL: [Isa; 3] = [Isa::Avx512, Isa::Avx2, Isa::Scalar];

    /// The best instruction set this CPU supports.
    pub fn detect() -> Isa {
        Isa::ALL
            .into_iter()
            .find(|isa| isa.is_available())
            .unwrap_or(Isa::Scalar)
    }

    /// Whether this CPU can run `self` (`Scalar` always).
    pub fn is_available(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("popcnt")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
                    && std::arch::is_x86_feature_detected!("popcnt")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// `"scalar"`, `"avx2"` or `"avx512"`.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The `kendall.simd` option: an instruction set, or `auto` for the best one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SimdChoice {
    /// The best instruction set of this CPU.
    #[default]
    Auto,
    /// Exactly this instruction set; refused where the CPU lacks it.
    Force(Isa),
}

impl SimdChoice {
    /// The instruction set to run, or an error naming what the CPU lacks.
    pub fn resolve(self) -> Result<Isa> {
        match self {
            SimdChoice::Auto => Ok(Isa::detect()),
            SimdChoice::Force(isa) if isa.is_available() => Ok(isa),
            SimdChoice::Force(isa) => Err(DataFusionError::Plan(format!(
                "kendall.simd = '{isa}' but this CPU does not support {isa} \
                 (best available: {}); use 'auto'",
                Isa::detect()
            ))),
        }
    }
}

impl fmt::Display for SimdChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimdChoice::Auto => f.write_str("auto"),
            SimdChoice::Force(isa) => f.write_str(isa.name()),
        }
    }
}

impl FromStr for SimdChoice {
    type Err = DataFusionError;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "auto" => SimdChoice::Auto,
            "scalar" => SimdChoice::Force(Isa::Scalar),
            "avx2" => SimdChoice::Force(Isa::Avx2),
            "avx512" => SimdChoice::Force(Isa::Avx512),
            other => {
                return Err(DataFusionError::Configuration(format!(
                    "kendall.simd must be one of 'auto', 'avx512', 'avx2', 'scalar', got '{other}'"
                )));
            }
        })
    }
}
