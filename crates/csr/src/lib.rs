//! csr
