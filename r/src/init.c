// The entry points R calls (.Call), each wrapping the Rust function of the
// same name (src/rust/src/lib.rs). The layout is savvy's (what `savvy-cli
// update` generates): a Rust error comes back as a tagged pointer to a
// CHARSXP message, raised here as an R error, so that R's long jump never
// crosses a Rust frame.

// clang-format off
#include <stdint.h>
#include <Rinternals.h>
#include <R_ext/Parse.h>
// clang-format on

#include "rust/api.h"

static uintptr_t TAGGED_POINTER_MASK = (uintptr_t)1;

SEXP handle_result(SEXP res_) {
    uintptr_t res = (uintptr_t)res_;
    if ((res & TAGGED_POINTER_MASK) == 1) {
        SEXP res_aligned = (SEXP)(res & ~TAGGED_POINTER_MASK);
        if (TYPEOF(res_aligned) == CHARSXP) {
            // An error of the Rust code: its message.
            Rf_errorcall(R_NilValue, "%s", CHAR(res_aligned));
        } else {
            // An R error caught in R_UnwindProtect: continue unwinding.
            R_ContinueUnwind(res_aligned);
        }
    }
    return (SEXP)res;
}

SEXP savvy_kd_sql__impl(SEXP c_arg__sql, SEXP c_arg__names, SEXP c_arg__tables, SEXP c_arg__option_names, SEXP c_arg__option_values, SEXP c_arg__progress) {
    SEXP res = savvy_kd_sql__ffi(c_arg__sql, c_arg__names, c_arg__tables, c_arg__option_names, c_arg__option_values, c_arg__progress);
    return handle_result(res);
}

SEXP savvy_kd_cor__impl(SEXP c_arg__x, SEXP c_arg__y, SEXP c_arg__pairwise, SEXP c_arg__variant, SEXP c_arg__progress) {
    SEXP res = savvy_kd_cor__ffi(c_arg__x, c_arg__y, c_arg__pairwise, c_arg__variant, c_arg__progress);
    return handle_result(res);
}

static const R_CallMethodDef CallEntries[] = {
    {"savvy_kd_sql__impl", (DL_FUNC) &savvy_kd_sql__impl, 6},
    {"savvy_kd_cor__impl", (DL_FUNC) &savvy_kd_cor__impl, 5},
    {NULL, NULL, 0}
};

void R_init_datafusion_kendall(DllInfo *dll) {
    R_registerRoutines(dll, NULL, CallEntries, NULL, NULL);
    R_useDynamicSymbols(dll, FALSE);
}
