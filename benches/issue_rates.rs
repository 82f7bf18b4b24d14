//! Issue rates of the instructions the bit-plane kernel's AVX2 and AVX-512
//! loops use, measured on this CPU, for the throughput bound in
//! `docs/kernels.md`.
//!
//! ```text
//! cargo bench --bench issue_rates
//! ```
//!
//! The clock is measured first: a chain of dependent 64-bit `add`s of a
//! register retires one per cycle on every x86-64 core, so adds per second
//! are cycles per second (whatever the boost or the hypervisor makes of
//! the nominal frequency); a chain of `imul`s (three cycles each) checks
//! it. Each instruction is then timed as 12 independent copies per
//! loop iteration (registers ymm0–ymm11 written, ymm12–ymm15 read), which
//! only the number of ports that execute it limits; loads read one 4 KiB
//! buffer (L1). Pairs of instructions run together show which share
//! ports. On a CPU with AVX-512 F and VPOPCNTDQ the same is done for the
//! 512-bit instructions of the AVX-512 loops (zmm0–zmm11 written,
//! zmm12–zmm15 read). Printed: instructions per cycle, best of five runs.
//! Nothing here is used by the library.

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::asm;
    use std::time::Instant;

    /// Iterations per timed run.
    const ITERS: u64 = 20_000_000;

    /// Seconds of the best of five runs of `f`.
    fn best(f: impl Fn()) -> f64 {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// Cycles per second, from a chain of dependent adds of a register (8
    /// per iteration). Not adds of an immediate: Intel's Golden Cove cores
    /// (Sapphire Rapids) run chains of those faster than one a cycle.
    pub fn clock() -> f64 {
        let secs = best(|| {
            let mut x = 0u64;
            let one = std::hint::black_box(1u64);
            for _ in 0..ITERS {
                // SAFETY: register arithmetic only.
                unsafe {
                    asm!(
                        "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
                        "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
                        x = inout(reg) x,
                        one = in(reg) one,
                        options(nomem, nostack),
                    );
                }
            }
            std::hint::black_box(x);
        });
        (ITERS * 8) as f64 / secs
    }

    /// Cycles per second from a chain of dependent `imul`s (latency 3 on
    /// every x86-64 core of the last decade), as a check on [`clock`].
    pub fn clock_imul() -> f64 {
        let secs = best(|| {
            let mut x = 3u64;
            for _ in 0..ITERS {
                // SAFETY: register arithmetic only.
                unsafe {
                    asm!(
                        "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}",
                        x = inout(reg) x,
                        options(nomem, nostack),
                    );
                }
            }
            std::hint::black_box(x);
        });
        (ITERS * 4 * 3) as f64 / secs
    }

    /// 12 independent copies of a three-operand instruction on registers
    /// `$r` ("ymm" or "zmm"): destinations 0–11, sources two of 12–15.
    macro_rules! rrr {
        ($op:literal, $r:literal) => {
            concat!(
                $op, " ", $r, "0, ", $r, "12, ", $r, "13\n", $op, " ", $r, "1, ", $r, "13, ", $r,
                "14\n", $op, " ", $r, "2, ", $r, "14, ", $r, "15\n", $op, " ", $r, "3, ", $r,
                "15, ", $r, "12\n", $op, " ", $r, "4, ", $r, "12, ", $r, "14\n", $op, " ", $r,
                "5, ", $r, "13, ", $r, "15\n", $op, " ", $r, "6, ", $r, "12, ", $r, "13\n", $op,
                " ", $r, "7, ", $r, "13, ", $r, "14\n", $op, " ", $r, "8, ", $r, "14, ", $r,
                "15\n", $op, " ", $r, "9, ", $r, "15, ", $r, "12\n", $op, " ", $r, "10, ", $r,
                "12, ", $r, "14\n", $op, " ", $r, "11, ", $r, "13, ", $r, "15\n",
            )
        };
    }

    /// 12 independent copies of a shift by an immediate.
    macro_rules! rri {
        ($op:literal) => {
            concat!(
                $op,
                " ymm0, ymm12, 4\n",
                $op,
                " ymm1, ymm13, 4\n",
                $op,
                " ymm2, ymm14, 4\n",
                $op,
                " ymm3, ymm15, 4\n",
                $op,
                " ymm4, ymm12, 4\n",
                $op,
                " ymm5, ymm13, 4\n",
                $op,
                " ymm6, ymm14, 4\n",
                $op,
                " ymm7, ymm15, 4\n",
                $op,
                " ymm8, ymm12, 4\n",
                $op,
                " ymm9, ymm13, 4\n",
                $op,
                " ymm10, ymm14, 4\n",
                $op,
                " ymm11, ymm15, 4\n",
            )
        };
    }

    /// 12 independent 256-bit loads from the buffer at `rsi` (L1).
    macro_rules! loads {
        () => {
            concat!(
                "vmovdqu ymm0, [rsi]\n",
                "vmovdqu ymm1, [rsi + 32]\n",
                "vmovdqu ymm2, [rsi + 64]\n",
                "vmovdqu ymm3, [rsi + 96]\n",
                "vmovdqu ymm4, [rsi + 128]\n",
                "vmovdqu ymm5, [rsi + 160]\n",
                "vmovdqu ymm6, [rsi + 192]\n",
                "vmovdqu ymm7, [rsi + 224]\n",
                "vmovdqu ymm8, [rsi + 256]\n",
                "vmovdqu ymm9, [rsi + 288]\n",
                "vmovdqu ymm10, [rsi + 320]\n",
                "vmovdqu ymm11, [rsi + 352]\n",
            )
        };
    }

    /// Instructions per cycle of `$count` instructions per iteration of
    /// the template (at `$hz` cycles per second) whose destinations are
    /// registers 0–11 of the class `ymm` or `zmm`; best of five runs. For
    /// `zmm` it expands inside a function with AVX-512 F and VPOPCNTDQ
    /// enabled (a plain loop, not a closure, so that the asm is in it).
    macro_rules! rate {
        ($hz:expr, $count:expr, $template:expr, ymm) => {
            rate!(@run $hz, $count, $template, "ymm0", "ymm1", "ymm2", "ymm3", "ymm4",
                "ymm5", "ymm6", "ymm7", "ymm8", "ymm9", "ymm10", "ymm11")
        };
        ($hz:expr, $count:expr, $template:expr, zmm) => {
            rate!(@run $hz, $count, $template, "zmm0", "zmm1", "zmm2", "zmm3", "zmm4",
                "zmm5", "zmm6", "zmm7", "zmm8", "zmm9", "zmm10", "zmm11")
        };
        (@run $hz:expr, $count:expr, $template:expr, $($reg:tt),+) => {{
            let buffer = vec![0x5555_5555_5555_5555u64; 512];
            let p = buffer.as_ptr();
            let mut secs = f64::INFINITY;
            for _ in 0..5 {
                let t = Instant::now();
                for _ in 0..ITERS {
                    // SAFETY: the caller checked the instruction set of the
                    // template (AVX2, or AVX-512 F and VPOPCNTDQ); loads read
                    // within `buffer` (offsets below 4 KiB).
                    unsafe {
                        asm!(
                            $template,
                            in("rsi") p,
                            $(out($reg) _,)+
                            options(nostack, readonly),
                        );
                    }
                }
                secs = secs.min(t.elapsed().as_secs_f64());
            }
            ($count as f64) * ITERS as f64 / (secs * $hz)
        }};
    }

    /// 12 independent copies of a two-operand 512-bit instruction
    /// (`vpopcntq`): destinations zmm0–zmm11, sources zmm12–zmm15.
    macro_rules! zz {
        ($op:literal) => {
            concat!(
                $op,
                " zmm0, zmm12\n",
                $op,
                " zmm1, zmm13\n",
                $op,
                " zmm2, zmm14\n",
                $op,
                " zmm3, zmm15\n",
                $op,
                " zmm4, zmm12\n",
                $op,
                " zmm5, zmm13\n",
                $op,
                " zmm6, zmm14\n",
                $op,
                " zmm7, zmm15\n",
                $op,
                " zmm8, zmm12\n",
                $op,
                " zmm9, zmm13\n",
                $op,
                " zmm10, zmm14\n",
                $op,
                " zmm11, zmm15\n",
            )
        };
    }

    /// 12 copies of `vpternlogq` with the kernel's function 0x02; each
    /// also reads its destination, a chain of one instruction per
    /// iteration that the other eleven hide.
    macro_rules! ternlog {
        () => {
            concat!(
                "vpternlogq zmm0, zmm12, zmm13, 2\n",
                "vpternlogq zmm1, zmm13, zmm14, 2\n",
                "vpternlogq zmm2, zmm14, zmm15, 2\n",
                "vpternlogq zmm3, zmm15, zmm12, 2\n",
                "vpternlogq zmm4, zmm12, zmm14, 2\n",
                "vpternlogq zmm5, zmm13, zmm15, 2\n",
                "vpternlogq zmm6, zmm12, zmm13, 2\n",
                "vpternlogq zmm7, zmm13, zmm14, 2\n",
                "vpternlogq zmm8, zmm14, zmm15, 2\n",
                "vpternlogq zmm9, zmm15, zmm12, 2\n",
                "vpternlogq zmm10, zmm12, zmm14, 2\n",
                "vpternlogq zmm11, zmm13, zmm15, 2\n",
            )
        };
    }

    /// 12 independent 512-bit loads from the buffer at `rsi` (L1).
    macro_rules! loads512 {
        () => {
            concat!(
                "vmovdqu64 zmm0, [rsi]\n",
                "vmovdqu64 zmm1, [rsi + 64]\n",
                "vmovdqu64 zmm2, [rsi + 128]\n",
                "vmovdqu64 zmm3, [rsi + 192]\n",
                "vmovdqu64 zmm4, [rsi + 256]\n",
                "vmovdqu64 zmm5, [rsi + 320]\n",
                "vmovdqu64 zmm6, [rsi + 384]\n",
                "vmovdqu64 zmm7, [rsi + 448]\n",
                "vmovdqu64 zmm8, [rsi + 512]\n",
                "vmovdqu64 zmm9, [rsi + 576]\n",
                "vmovdqu64 zmm10, [rsi + 640]\n",
                "vmovdqu64 zmm11, [rsi + 704]\n",
            )
        };
    }

    /// The AVX-512 rows of the table, at `hz` cycles per second.
    ///
    /// # Safety
    /// The CPU must support AVX-512 F and VPOPCNTDQ.
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    unsafe fn rows512(hz: f64) -> Vec<(&'static str, f64)> {
        vec![
            (
                "vmovdqu64 zmm, m512 (load)",
                rate!(hz, 12, loads512!(), zmm),
            ),
            ("vpxorq zmm", rate!(hz, 12, rrr!("vpxorq", "zmm"), zmm)),
            ("vpaddq zmm", rate!(hz, 12, rrr!("vpaddq", "zmm"), zmm)),
            ("vpternlogq zmm", rate!(hz, 12, ternlog!(), zmm)),
            ("vpopcntq zmm", rate!(hz, 12, zz!("vpopcntq"), zmm)),
            (
                "vpopcntq + vpxorq",
                rate!(hz, 24, concat!(zz!("vpopcntq"), rrr!("vpxorq", "zmm")), zmm),
            ),
            (
                "vpopcntq + vpxorq + vpaddq",
                rate!(
                    hz,
                    36,
                    concat!(
                        zz!("vpopcntq"),
                        rrr!("vpxorq", "zmm"),
                        rrr!("vpaddq", "zmm")
                    ),
                    zmm
                ),
            ),
            (
                "vpopcntq + vpternlogq",
                rate!(hz, 24, concat!(zz!("vpopcntq"), ternlog!()), zmm),
            ),
            (
                "load + vpxorq",
                rate!(hz, 24, concat!(loads512!(), rrr!("vpxorq", "zmm")), zmm),
            ),
        ]
    }

    /// The table of issue rates.
    pub fn run() {
        let hz = clock();
        println!("clock (dependent adds): {:.3} GHz", hz / 1e9);
        println!(
            "clock (dependent imuls, latency 3): {:.3} GHz",
            clock_imul() / 1e9
        );
        if !std::arch::is_x86_feature_detected!("avx2") {
            println!("no AVX2: nothing else to measure");
            return;
        }
        println!("| instructions (12 independent copies each) | per cycle |");
        println!("|:---|---:|");
        let rows: Vec<(&str, f64)> = vec![
            ("vmovdqu ymm, m256 (load)", rate!(hz, 12, loads!(), ymm)),
            ("vpxor ymm", rate!(hz, 12, rrr!("vpxor", "ymm"), ymm)),
            ("vpand ymm", rate!(hz, 12, rrr!("vpand", "ymm"), ymm)),
            ("vpshufb ymm", rate!(hz, 12, rrr!("vpshufb", "ymm"), ymm)),
            ("vpsrlw ymm, imm", rate!(hz, 12, rri!("vpsrlw"), ymm)),
            ("vpaddb ymm", rate!(hz, 12, rrr!("vpaddb", "ymm"), ymm)),
            ("vpaddq ymm", rate!(hz, 12, rrr!("vpaddq", "ymm"), ymm)),
            ("vpsadbw ymm", rate!(hz, 12, rrr!("vpsadbw", "ymm"), ymm)),
            (
                "vpshufb + vpsrlw",
                rate!(hz, 24, concat!(rrr!("vpshufb", "ymm"), rri!("vpsrlw")), ymm),
            ),
            (
                "vpshufb + vpsadbw",
                rate!(
                    hz,
                    24,
                    concat!(rrr!("vpshufb", "ymm"), rrr!("vpsadbw", "ymm")),
                    ymm
                ),
            ),
            (
                "vpsadbw + vpaddq",
                rate!(
                    hz,
                    24,
                    concat!(rrr!("vpsadbw", "ymm"), rrr!("vpaddq", "ymm")),
                    ymm
                ),
            ),
            (
                "vpxor + vpaddb",
                rate!(
                    hz,
                    24,
                    concat!(rrr!("vpxor", "ymm"), rrr!("vpaddb", "ymm")),
                    ymm
                ),
            ),
            (
                "load + vpxor",
                rate!(hz, 24, concat!(loads!(), rrr!("vpxor", "ymm")), ymm),
            ),
        ];
        for (name, r) in rows {
            println!("| {name} | {r:.2} |");
        }
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
        {
            // SAFETY: both features were just detected.
            for (name, r) in unsafe { rows512(hz) } {
                println!("| {name} | {r:.2} |");
            }
        } else {
            println!("(no AVX-512 F and VPOPCNTDQ: no 512-bit rows)");
        }
    }
}

fn main() {
    #[cfg(target_arch = "x86_64")]
    x86::run();
    #[cfg(not(target_arch = "x86_64"))]
    println!("issue rates are measured on x86-64 only");
}
