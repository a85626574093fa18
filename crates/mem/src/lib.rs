//! Memories behind the SoC map: sparse linear memory for HBM and host
//! memory, and the partitioned SBUF/PSUM of each NeuronCore (docs/references/design.md §2, §3).
//!
//! Every memory is reached through [`Bytes<A>`], where `A` is the address
//! kind the memory understands: `u64` offsets for [`SparseMemory`] and for
//! the linear SBUF/PSUM windows, [`soc_map::SbufAddr`] for [`Sbuf`],
//! [`soc_map::PsumAddr`] for [`Psum`]. A refused access returns a
//! [`MemFault`] value and changes nothing; no caller-supplied address or
//! length can panic.

mod bytes;
mod fault;
mod partitioned;
mod sparse;

pub use bytes::Bytes;
pub use fault::MemFault;
pub use partitioned::{PSUM_WRITE_ALIGN_BYTES, PartitionGeometry, PartitionedMemory, Psum, Sbuf};
pub use sparse::{PAGE_BYTES, PatternFn, SparseMemory};
