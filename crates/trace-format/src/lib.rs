//! trace-format
