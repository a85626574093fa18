//! The pure arithmetic behind the SDMA application engines (docs/references/design.md §2,
//! §8; docs/references/wiki.md §C.6, §F, §J):
//!
//! * [`checksum`](mod@checksum) — the CME ("Fast CRC + Memcopy") CRC/checksum
//!   algorithms selected by `SDMA_CMETYPE`, as streaming state machines
//!   with a resumable state (for chained IVs);
//! * [`dtype`] — the element data types of the compute path and their
//!   conversion to and from `f32`;
//! * [`cce`] — CCE in-transfer compute: elementwise reduce with
//!   conversion on load and store;
//! * [`swap`] — the CME endian / bit-swap controls applied to values and
//!   data.
//!
//! Nothing here knows about descriptors, queues or timing: the engine
//! models (udma/sdma crates) decode the descriptor fields, choose initial
//! values, and decide where results go. No input can make these functions
//! panic; refusals are [`CceError`] values.
//!
//! The exact parameters of every algorithm, the IV mapping and the
//! rounding rules are listed in `docs/cme.md`.

pub mod cce;
pub mod checksum;
pub mod dtype;
pub mod swap;

pub use cce::{
    Accumulator, CCE_MAX_ELEMENTS_V2, CCE_MAX_ELEMENTS_V3, CCE_MAX_SOURCES, CceError, CceType,
    DgeComputeOp, FmaOperand, MULTIPLY_FMA_SCALE, ReduceOp, reduce, reduce_codes,
};
pub use checksum::{
    CRC_IV_CACHE_SLOTS, Checksum, ChecksumKind, ChecksumState, CmeType, HW_CRC_INIT, checksum,
    checksum_with_iv,
};
pub use dtype::{Dtype, ElementBytes, from_f32, to_f32};
pub use swap::{SWAP_WORD_BYTES, Swap};
