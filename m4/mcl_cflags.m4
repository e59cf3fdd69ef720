# mcl_cflags.m4 -- small compiler-flag helpers for metacl's configure.ac.
#
# MCL_CHECK_CFLAG(FLAG, [ACTION-IF-ACCEPTED], [ACTION-IF-REJECTED])
# --------------------------------------------------------------
# Check whether the C compiler accepts FLAG (compiled together with the current
# CFLAGS and -Werror, so that compilers which only *warn* about unknown options,
# e.g. clang, count as rejecting it).  The result is cached per flag.
AC_DEFUN([MCL_CHECK_CFLAG],
[AS_VAR_PUSHDEF([mcl_cv], [mcl_cv_cflag_$1])dnl
AC_CACHE_CHECK([whether $CC accepts $1], [mcl_cv],
  [mcl_save_CFLAGS=$CFLAGS
   CFLAGS="$CFLAGS -Werror $1"
   AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[]], [[]])],
     [AS_VAR_SET([mcl_cv], [yes])], [AS_VAR_SET([mcl_cv], [no])])
   CFLAGS=$mcl_save_CFLAGS])
AS_VAR_IF([mcl_cv], [yes], [$2], [$3])
AS_VAR_POPDEF([mcl_cv])dnl
])

# MCL_ADD_CFLAGS(VARIABLE, FLAG...)
# ---------------------------------
# Append every FLAG the compiler accepts to the shell VARIABLE (silently skip the
# others; each is reported by MCL_CHECK_CFLAG's "checking ..." line).
AC_DEFUN([MCL_ADD_CFLAGS],
[for mcl_flag in $2; do
  MCL_CHECK_CFLAG([$mcl_flag], [$1="$$1 $mcl_flag"])
done])
