//! Stand-in greptime releases served by the mirror.
