//! DML (placeholder until the logger lands).
