//! Stand-in go releases served by the mirror.
