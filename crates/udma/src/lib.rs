//! udma engines (in progress).
