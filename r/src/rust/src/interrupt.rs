//! Ctrl-C in the R console, seen without R's long jumps: R's
//! `R_CheckUserInterrupt` runs inside `R_ToplevelExec`, which returns
//! `FALSE` instead of jumping when an interrupt was pending (and consumes
//! it; the R side then signals an `interrupt` condition).

use std::ffi::{c_int, c_void};

// R's C API (libR, loaded into the process that loads this package).
unsafe extern "C" {
    fn R_ToplevelExec(fun: unsafe extern "C" fn(*mut c_void), data: *mut c_void) -> c_int;
    fn R_CheckUserInterrupt();
}

unsafe extern "C" fn check(_data: *mut c_void) {
    // SAFETY: called by R_ToplevelExec on R's main thread; a pending
    // interrupt jumps back to R_ToplevelExec, across no Rust frame.
    unsafe { R_CheckUserInterrupt() }
}

/// Whether the user pressed Ctrl-C (or Esc in R's GUIs) since R last
/// checked. Call from R's main thread only.
pub fn pending() -> bool {
    // SAFETY: only called from the function R called (R's main thread);
    // `check` takes no data and jumps no further than R_ToplevelExec.
    unsafe { R_ToplevelExec(check, std::ptr::null_mut()) == 0 }
}
