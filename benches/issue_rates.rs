//! Issue rates of the instructions the bit-plane kernel's AVX2 loops use,
//! measured on this CPU, for the throughput bound in `docs/kernels.md`.
//!
//! ```text
//! cargo bench --bench issue_rates
//! ```
//!
//! The clock is measured first: a chain of dependent 64-bit `add`s retires
//! one per cycle on every x86-64 core, so adds per second are cycles per
//! second (whatever the boost or the hypervisor makes of the nominal
//! frequency). Each instruction is then timed as 12 independent copies per
//! loop iteration (registers ymm0–ymm11 written, ymm12–ymm15 read), which
//! only the number of ports that execute it limits; loads read one 4 KiB
//! buffer (L1). Pairs of instructions run together show which share
//! ports. Printed: instructions per cycle, best of five runs. Nothing
//! here is used by the library.

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

    /// Cycles per second, from a chain of dependent adds (8 per iteration).
    pub fn clock() -> f64 {
        let secs = best(|| {
            let mut x = 0u64;
            for _ in 0..ITERS {
                // SAFETY: register arithmetic only.
                unsafe {
                    asm!(
                        "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
                        "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
                        x = inout(reg) x,
                        options(nomem, nostack),
                    );
                }
            }
            std::hint::black_box(x);
        });
        (ITERS * 8) as f64 / secs
    }

    /// 12 independent copies of a three-operand instruction: destinations
    /// ymm0–ymm11, sources two of ymm12–ymm15.
    macro_rules! rrr {
        ($op:literal) => {
            concat!(
                $op,
                " ymm0, ymm12, ymm13\n",
                $op,
                " ymm1, ymm13, ymm14\n",
                $op,
                " ymm2, ymm14, ymm15\n",
                $op,
                " ymm3, ymm15, ymm12\n",
                $op,
                " ymm4, ymm12, ymm14\n",
                $op,
                " ymm5, ymm13, ymm15\n",
                $op,
                " ymm6, ymm12, ymm13\n",
                $op,
                " ymm7, ymm13, ymm14\n",
                $op,
                " ymm8, ymm14, ymm15\n",
                $op,
                " ymm9, ymm15, ymm12\n",
                $op,
                " ymm10, ymm12, ymm14\n",
                $op,
                " ymm11, ymm13, ymm15\n",
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
    /// the template (at `$hz` cycles per second).
    macro_rules! rate {
        ($hz:expr, $count:expr, $template:expr) => {{
            let buffer = vec![0x5555_5555_5555_5555u64; 512];
            let p = buffer.as_ptr();
            let secs = best(|| {
                for _ in 0..ITERS {
                    // SAFETY: the caller checked AVX2; loads read within
                    // `buffer` (offsets below 4 KiB).
                    unsafe {
                        asm!(
                            $template,
                            in("rsi") p,
                            out("ymm0") _, out("ymm1") _, out("ymm2") _, out("ymm3") _,
                            out("ymm4") _, out("ymm5") _, out("ymm6") _, out("ymm7") _,
                            out("ymm8") _, out("ymm9") _, out("ymm10") _, out("ymm11") _,
                            options(nostack, readonly),
                        );
                    }
                }
            });
            ($count as f64) * ITERS as f64 / (secs * $hz)
        }};
    }

    /// The table of issue rates (AVX2 only).
    pub fn run() {
        let hz = clock();
        println!("clock (dependent adds): {:.3} GHz", hz / 1e9);
        if !std::arch::is_x86_feature_detected!("avx2") {
            println!("no AVX2: nothing else to measure");
            return;
        }
        println!("| instructions (12 independent copies each) | per cycle |");
        println!("|:---|---:|");
        let rows: Vec<(&str, f64)> = vec![
            ("vmovdqu ymm, m256 (load)", rate!(hz, 12, loads!())),
            ("vpxor ymm", rate!(hz, 12, rrr!("vpxor"))),
            ("vpand ymm", rate!(hz, 12, rrr!("vpand"))),
            ("vpshufb ymm", rate!(hz, 12, rrr!("vpshufb"))),
            ("vpsrlw ymm, imm", rate!(hz, 12, rri!("vpsrlw"))),
            ("vpaddb ymm", rate!(hz, 12, rrr!("vpaddb"))),
            ("vpaddq ymm", rate!(hz, 12, rrr!("vpaddq"))),
            ("vpsadbw ymm", rate!(hz, 12, rrr!("vpsadbw"))),
            (
                "vpshufb + vpsrlw",
                rate!(hz, 24, concat!(rrr!("vpshufb"), rri!("vpsrlw"))),
            ),
            (
                "vpshufb + vpsadbw",
                rate!(hz, 24, concat!(rrr!("vpshufb"), rrr!("vpsadbw"))),
            ),
            (
                "vpsadbw + vpaddq",
                rate!(hz, 24, concat!(rrr!("vpsadbw"), rrr!("vpaddq"))),
            ),
            (
                "vpxor + vpaddb",
                rate!(hz, 24, concat!(rrr!("vpxor"), rrr!("vpaddb"))),
            ),
            (
                "load + vpxor",
                rate!(hz, 24, concat!(loads!(), rrr!("vpxor"))),
            ),
        ];
        for (name, r) in rows {
            println!("| {name} | {r:.2} |");
        }
    }
}

fn main() {
    #[cfg(target_arch = "x86_64")]
    x86::run();
    #[cfg(not(target_arch = "x86_64"))]
    println!("issue rates are measured on x86-64 only");
}
