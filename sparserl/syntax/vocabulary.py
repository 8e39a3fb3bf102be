"""The C++ and CUDA words the checker treats specially, grouped by the role they play."""

from __future__ import annotations

# Words that name a fundamental type (several may combine: 'unsigned long long int').
TYPE_KEYWORDS = frozenset(
    "void bool char char8_t char16_t char32_t wchar_t short int long float double signed "
    "unsigned auto __int128 __fp16".split()
)

# Declaration specifiers other than types: storage, qualifiers, CUDA memory spaces.
SPECIFIER_KEYWORDS = frozenset(
    "const volatile static extern register inline constexpr consteval constinit thread_local "
    "mutable virtual explicit friend typedef typename __device__ __host__ __global__ __shared__ "
    "__constant__ __managed__ __forceinline__ __noinline__ __inline__ __inline __restrict__ "
    "__restrict __grid_constant__ __thread__ __thread __volatile__ __const".split()
)

# Words followed by a parenthesised group that is an attribute, not an expression to check.
ATTRIBUTE_GROUPS = frozenset(
    "__attribute__ __attribute __declspec __launch_bounds__ __maxnreg__ __cluster_dims__ __align__ alignas "
    "__location__ __annotate__ __builtin_align__".split()
)

# Words followed by a parenthesised group whose insides the checker does not read.
OPAQUE_GROUPS = ATTRIBUTE_GROUPS | frozenset(
    "asm __asm__ __asm _Pragma __builtin_offsetof offsetof __builtin_va_arg "
    "__builtin_types_compatible_p".split()
)

CLASS_KEYS = frozenset({"struct", "class", "union", "enum"})

# Words that begin a statement and can never occur inside an expression.
STATEMENT_KEYWORDS = frozenset(
    "if else for while do switch case default return break continue goto try catch typedef "
    "namespace using".split()
)

# Statement keywords that are not declarations: never at namespace scope either.
CONTROL_FLOW_KEYWORDS = STATEMENT_KEYWORDS - {"typedef", "using", "namespace"}

# Words that start a control statement with a parenthesised head: 'for (...)'.
CONTROL_WITH_HEAD = frozenset({"if", "for", "while", "switch", "catch"})
CONTROL_WITHOUT_HEAD = frozenset({"else", "do", "try"})

# Every other keyword: operators spelled as words, literals, casts and the like. (C++17:
# 'final' and 'override' are only contextual, and C++20's 'requires', 'concept' and
# 'co_await' are still plain names.)
OTHER_KEYWORDS = frozenset(
    "sizeof alignof __alignof__ __alignof noexcept typeid decltype __typeof__ typeof new delete "
    "this true false nullptr operator template throw static_cast dynamic_cast reinterpret_cast "
    "const_cast and or not xor bitand bitor compl and_eq or_eq xor_eq not_eq __func__ "
    "__FUNCTION__ __PRETTY_FUNCTION__ export public private protected __extension__ asm __asm__ "
    "__asm _Pragma static_assert".split()
)

KEYWORDS = (
    TYPE_KEYWORDS
    | SPECIFIER_KEYWORDS
    | ATTRIBUTE_GROUPS
    | OPAQUE_GROUPS
    | CLASS_KEYS
    | STATEMENT_KEYWORDS
    | OTHER_KEYWORDS
)

# Literals among the keywords: they are operands in an expression.
LITERAL_KEYWORDS = frozenset({"true", "false", "nullptr", "this"})

# Prefixes of compiler built-in functions that no header declares ('__builtin_expect').
BUILTIN_PREFIXES = ("__builtin_", "__nvvm_")
