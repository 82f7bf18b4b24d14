//! Instruction sets of the SIMD kernels, detected once per query.
//!
//! Detection can be capped with the environment variable
//! [`MAX_ISA_ENV`] (`KENDALL_MAX_ISA=avx2` or `=scalar`), so that one
//! AVX-512 machine can run the whole test suite as an AVX2-only and as a
//! scalar-only machine would: every instruction set above the cap is then
//! treated exactly like one the CPU lacks (not detected, refused when forced).

use std::fmt;
use std::sync::OnceLock;

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

    /// The best instruction set this CPU supports (within the cap, if any).
    pub fn detect() -> Isa {
        Isa::ALL
            .into_iter()
            .find(|isa| isa.is_available())
            .unwrap_or(Isa::Scalar)
    }

    /// Whether `self` may run here: the CPU supports it and it is not above
    /// the cap set by [`MAX_ISA_ENV`] (`Scalar` always).
    pub fn is_available(self) -> bool {
        self.within_cap() && self.cpu_supports()
    }

    /// Whether the cap set by [`MAX_ISA_ENV`] (if any) allows `self`.
    pub fn within_cap(self) -> bool {
        cap().is_none_or(|cap| self.rank() <= cap.rank())
    }

    /// Why `self` is not available, for messages: the CPU lacks it, or the
    /// cap excludes it. `None` when it is available.
    pub fn unavailable_reason(self) -> Option<String> {
        if !self.cpu_supports() {
            Some(format!("this CPU does not support {self}"))
        } else if !self.within_cap() {
            Some(format!(
                "{self} is disabled by {MAX_ISA_ENV}={}",
                cap().map_or("", Isa::name)
            ))
        } else {
            None
        }
    }

    /// Whether the portable path may use the POPCNT instruction: the CPU has
    /// it and the cap is above `Scalar` (a scalar cap stands for a baseline
    /// x86-64 CPU, which lacks it).
    pub fn popcnt_available() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            Isa::Avx2.within_cap() && std::arch::is_x86_feature_detected!("popcnt")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    /// Position in the order scalar < avx2 < avx512.
    fn rank(self) -> u8 {
        match self {
            Isa::Scalar => 0,
            Isa::Avx2 => 1,
            Isa::Avx512 => 2,
        }
    }

    /// Whether this CPU has the instructions of `self` (ignoring the cap).
    pub fn cpu_supports(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("popcnt")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => {
                // AVX2 too: the AVX-512 kernels reuse some AVX2 loops.
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx2")
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

/// Environment variable capping the detected instruction set: `avx512`,
/// `avx2` or `scalar` (read once per process). Unset or empty: no cap.
pub const MAX_ISA_ENV: &str = "KENDALL_MAX_ISA";

/// The cap from [`MAX_ISA_ENV`], read once. An unknown value is reported on
/// stderr once and caps at `scalar`, the safe choice (never a panic).
pub fn cap() -> Option<Isa> {
    static CAP: OnceLock<Option<Isa>> = OnceLock::new();
    *CAP.get_or_init(|| {
        let value = std::env::var(MAX_ISA_ENV).ok()?;
        let value = value.trim();
        if value.is_empty() {
            return None;
        }
        match value.parse::<SimdChoice>() {
            Ok(choice) => choice.isa(),
            Err(_) => {
                eprintln!(
                    "warning: {MAX_ISA_ENV}='{value}' is not one of avx512, avx2, scalar; \
                     running as scalar"
                );
                Some(Isa::Scalar)
            }
        }
    })
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

crate::option_enum::option_enum! {
    /// The `kendall.simd` option: an instruction set, or `auto` for the best one.
    pub enum SimdChoice: "kendall.simd" {
        /// The best instruction set of this CPU.
        #[default]
        Auto = "auto",
        /// AVX-512; refused where the CPU lacks it.
        Avx512 = "avx512",
        /// AVX2; refused where the CPU lacks it.
        Avx2 = "avx2",
        /// Portable Rust.
        Scalar = "scalar",
    }
}

impl SimdChoice {
    /// The instruction set asked for; `None` for `auto`.
    pub fn isa(self) -> Option<Isa> {
        match self {
            SimdChoice::Auto => None,
            SimdChoice::Avx512 => Some(Isa::Avx512),
            SimdChoice::Avx2 => Some(Isa::Avx2),
            SimdChoice::Scalar => Some(Isa::Scalar),
        }
    }

    /// The instruction set to run, or an error naming what the CPU lacks.
    pub fn resolve(self) -> Result<Isa> {
        let Some(isa) = self.isa() else {
            return Ok(Isa::detect());
        };
        match isa.unavailable_reason() {
            None => Ok(isa),
            Some(why) => Err(DataFusionError::Plan(format!(
                "kendall.simd = '{isa}' but {why} (best available: {}); use 'auto'",
                Isa::detect()
            ))),
        }
    }
}
