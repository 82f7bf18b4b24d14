SEXP savvy_kd_sql__ffi(SEXP c_arg__sql, SEXP c_arg__names, SEXP c_arg__tables, SEXP c_arg__option_names, SEXP c_arg__option_values, SEXP c_arg__progress);
SEXP savvy_kd_cor__ffi(SEXP c_arg__x, SEXP c_arg__y, SEXP c_arg__pairwise, SEXP c_arg__variant, SEXP c_arg__progress);
