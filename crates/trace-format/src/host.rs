//! Trace language v3: host operations — the runtime's dmem allocator
//! driving the device through the simulated ioctl bus (issue 5,
//! docs/trace-format.md §5).

use serde::Serialize;

use crate::ast::{FileRef, FillPattern};

/// The 22 `dma_mem_usage_type_t` names (tdrv-dmem §1), lowercase, as `alloc
/// usage=` accepts them.
pub const USAGE_NAMES: &[&str] = &[
    "generic",
    "instr_pe",
    "instr_act",
    "instr_pool",
    "io",
    "dram_spill",
    "weight",
    "notification",
    "act_table",
    "instr_dve",
    "instr_sp",
    "scratchpad",
    "tensor",
    "ucode_lib",
    "pool_stdio",
    "cc",
    "scratchpad_not_shared",
    "xt_cc",
    "dma_ring",
    "dma_ring_spill",
    "dma_ring_io",
    "dma_ring_collectives",
];

/// The NRT status names `status=` accepts (public `nrt_status.h` names,
/// docs/trace-format.md §5.2). The dmem calls return `success`, `failure`,
/// `invalid`, `resource` and `fail_host_mem_alloc`; `invalid_handle` and
/// `timeout` are accepted but never returned (a copy that times out is
/// `failure`), so an expectation of them does not hold.
pub const STATUS_NAMES: &[&str] = &[
    "success",
    "failure",
    "invalid",
    "invalid_handle",
    "resource",
    "timeout",
    "fail_host_mem_alloc",
];

/// Bytes a host operation writes, or compares with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostData {
    /// `byte=B`.
    Byte(u8),
    /// `pattern=P [seed=S]` (as `fill`).
    Pattern {
        /// Which pattern.
        kind: FillPattern,
        /// First element.
        seed: u64,
    },
    /// `file=PATH [file_offset=N]`: bytes of a file.
    File {
        /// The file.
        path: FileRef,
        /// First byte of the file used.
        offset: u64,
    },
}

impl HostData {
    /// The bytes of a `len`-byte range starting at `index` bytes into the
    /// generated stream (files are read by the executor).
    pub fn generate(&self, index: u64, len: usize) -> Option<Vec<u8>> {
        match self {
            HostData::Byte(b) => Some(vec![*b; len]),
            HostData::Pattern { kind, seed } => Some(
                (0..len as u64)
                    .map(|i| kind.byte_at(*seed, index + i))
                    .collect(),
            ),
            HostData::File { .. } => None,
        }
    }
}

/// What `copyout` checks the bytes it read against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostCheck {
    /// The bytes the data spec generates.
    Data(HostData),
    /// `sha256=HEX` of the bytes read.
    Sha256(#[serde(serialize_with = "crate::ast::ser_hex_pub")] [u8; 32]),
}

/// One host operation (v3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum HostOp {
    /// `alloc NAME size=N [device | host] [channel=C] [nc=N] [usage=U]
    /// [align=A] [hint=TEXT] [allocator=A]` — `dmem_alloc` (or
    /// `dmem_alloc_aligned` with `align`).
    Alloc {
        /// Tensor name.
        name: String,
        /// Bytes.
        size: u64,
        /// Host memory (default device HBM).
        host: bool,
        /// HBM channel (default `nc / 2`).
        channel: Option<u32>,
        /// NeuronCore (default: the allocator's, else 0).
        nc: Option<u32>,
        /// Usage type name (default `tensor`).
        usage: String,
        /// Alignment (0 = none).
        align: u64,
        /// Debug hint (default the tensor name).
        hint: Option<String>,
        /// Allocator (default `global`).
        allocator: Option<String>,
    },
    /// `allocator NAME` — `dmem_allocator_create` of a MODEL allocator.
    Allocator {
        /// Its name.
        name: String,
        /// NeuronCore.
        nc: u32,
    },
    /// `allocator_destroy NAME` — unlinks without freeing; reports leaks.
    AllocatorDestroy {
        /// The allocator.
        name: String,
    },
    /// `scratchpad NAME size=N [nc=N]` — a contiguous scratchpad page on
    /// the TPB allocator.
    Scratchpad {
        /// Tensor name.
        name: String,
        /// Bytes.
        size: u64,
        /// NeuronCore.
        nc: u32,
    },
    /// `copyin NAME (byte=B | pattern=P [seed=S] | file=PATH) [offset=N]
    /// [len=N]` — `dmem_buf_copyin`.
    CopyIn {
        /// Tensor.
        name: String,
        /// What is written.
        data: HostData,
        /// Offset in the tensor.
        offset: u64,
        /// Bytes (default: to the tensor's end).
        len: Option<u64>,
    },
    /// `copyout NAME [offset=N] [len=N] [byte=B | pattern=P [seed=S] |
    /// file=PATH | sha256=HEX]` — `dmem_buf_copyout`, then check.
    CopyOut {
        /// Tensor.
        name: String,
        /// Offset in the tensor.
        offset: u64,
        /// Bytes (default: to the tensor's end).
        len: Option<u64>,
        /// What the bytes must be (`None`: print their SHA-256).
        check: Option<HostCheck>,
    },
    /// `batch_copy (in | out) tensors=A,B,… len=N (byte | pattern [seed])`
    /// — one batch ioctl with one op per tensor; `in` writes the data
    /// (pattern seeds advance by tensor), `out` reads and checks it.
    BatchCopy {
        /// Host → device.
        to_device: bool,
        /// The tensors, in order.
        tensors: Vec<String>,
        /// Bytes per op (from offset 0).
        len: u64,
        /// The data written or expected.
        data: HostData,
    },
    /// `free NAME` — `dmem_free`.
    Free {
        /// Tensor.
        name: String,
    },
    /// `acquire NAME` — `dmem_acquire_reference`.
    Acquire {
        /// Tensor.
        name: String,
    },
    /// `mem_stats` — the DML counters and the driver's accounting.
    MemStats,
    /// `runtime [zerocopy=on|off] [bar4_write_size=N] [dml_log=N]
    /// [dml_verbose=on|off] [metrics=on|off]` — the runtime
    /// configuration tdrv-dmem reads from `nrt_gconf`.
    Runtime {
        /// `test_zerocopy`.
        zerocopy: Option<bool>,
        /// `direct_bar4_write_size`.
        bar4_write_size: Option<u64>,
        /// DML log capacity.
        dml_log: Option<u64>,
        /// DML verbose report.
        dml_verbose: Option<bool>,
        /// `enable_metrics`.
        metrics: Option<bool>,
    },
    /// `driver [aligned_alloc=on|off] [attached=on|off] [drop_batch=N]` —
    /// kernel-driver switches (an old driver without aligned allocation,
    /// a detached process, a lost H2T doorbell).
    Driver {
        /// Aligned MEM_ALLOC support.
        aligned_alloc: Option<bool>,
        /// The attach gate passes.
        attached: Option<bool>,
        /// Drop the H2T batch with this sequence number.
        drop_batch: Option<u64>,
    },
}

impl HostOp {
    /// The directive keyword.
    pub fn directive(&self) -> &'static str {
        match self {
            HostOp::Alloc { .. } => "alloc",
            HostOp::Allocator { .. } => "allocator",
            HostOp::AllocatorDestroy { .. } => "allocator_destroy",
            HostOp::Scratchpad { .. } => "scratchpad",
            HostOp::CopyIn { .. } => "copyin",
            HostOp::CopyOut { .. } => "copyout",
            HostOp::BatchCopy { .. } => "batch_copy",
            HostOp::Free { .. } => "free",
            HostOp::Acquire { .. } => "acquire",
            HostOp::MemStats => "mem_stats",
            HostOp::Runtime { .. } => "runtime",
            HostOp::Driver { .. } => "driver",
        }
    }
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

impl HostData {
    fn fmt_keys(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostData::Byte(b) => write!(f, " byte={b:#04x}"),
            HostData::Pattern { kind, seed } => {
                write!(f, " pattern={}", kind.name())?;
                if *seed != 0 {
                    write!(f, " seed={seed:#x}")?;
                }
                Ok(())
            }
            HostData::File { path, offset } => {
                write!(f, " file={path}")?;
                if *offset != 0 {
                    write!(f, " file_offset={offset:#x}")?;
                }
                Ok(())
            }
        }
    }
}

impl HostOp {
    /// The canonical text of the arguments (after the keyword).
    pub(crate) fn fmt_args(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostOp::Alloc {
                name,
                size,
                host,
                channel,
                nc,
                usage,
                align,
                hint,
                allocator,
            } => {
                write!(
                    f,
                    " {name} size={size:#x} {}",
                    if *host { "host" } else { "device" }
                )?;
                if let Some(c) = channel {
                    write!(f, " channel={c}")?;
                }
                if let Some(n) = nc {
                    write!(f, " nc={n}")?;
                }
                write!(f, " usage={usage}")?;
                if *align != 0 {
                    write!(f, " align={align:#x}")?;
                }
                if let Some(h) = hint {
                    // Quoted as the lexer reads it back (not Rust's `{:?}`).
                    let h = FileRef {
                        path: h.clone(),
                        span: crate::span::Span::default(),
                    };
                    write!(f, " hint={h}")?;
                }
                if let Some(a) = allocator {
                    write!(f, " allocator={a}")?;
                }
                Ok(())
            }
            HostOp::Allocator { name, nc } => write!(f, " {name} nc={nc}"),
            HostOp::AllocatorDestroy { name }
            | HostOp::Free { name }
            | HostOp::Acquire { name } => {
                write!(f, " {name}")
            }
            HostOp::Scratchpad { name, size, nc } => write!(f, " {name} size={size:#x} nc={nc}"),
            HostOp::CopyIn {
                name,
                data,
                offset,
                len,
            } => {
                write!(f, " {name}")?;
                data.fmt_keys(f)?;
                if *offset != 0 {
                    write!(f, " offset={offset:#x}")?;
                }
                if let Some(l) = len {
                    write!(f, " len={l:#x}")?;
                }
                Ok(())
            }
            HostOp::CopyOut {
                name,
                offset,
                len,
                check,
            } => {
                write!(f, " {name}")?;
                if *offset != 0 {
                    write!(f, " offset={offset:#x}")?;
                }
                if let Some(l) = len {
                    write!(f, " len={l:#x}")?;
                }
                match check {
                    Some(HostCheck::Data(d)) => d.fmt_keys(f),
                    Some(HostCheck::Sha256(d)) => write!(f, " sha256={}", crate::number::to_hex(d)),
                    None => Ok(()),
                }
            }
            HostOp::BatchCopy {
                to_device,
                tensors,
                len,
                data,
            } => {
                write!(
                    f,
                    " {} tensors={} len={len:#x}",
                    if *to_device { "in" } else { "out" },
                    tensors.join(",")
                )?;
                data.fmt_keys(f)
            }
            HostOp::MemStats => Ok(()),
            HostOp::Runtime {
                zerocopy,
                bar4_write_size,
                dml_log,
                dml_verbose,
                metrics,
            } => {
                if let Some(z) = zerocopy {
                    write!(f, " zerocopy={}", on_off(*z))?;
                }
                if let Some(b) = bar4_write_size {
                    write!(f, " bar4_write_size={b}")?;
                }
                if let Some(d) = dml_log {
                    write!(f, " dml_log={d}")?;
                }
                if let Some(v) = dml_verbose {
                    write!(f, " dml_verbose={}", on_off(*v))?;
                }
                if let Some(m) = metrics {
                    write!(f, " metrics={}", on_off(*m))?;
                }
                Ok(())
            }
            HostOp::Driver {
                aligned_alloc,
                attached,
                drop_batch,
            } => {
                if let Some(a) = aligned_alloc {
                    write!(f, " aligned_alloc={}", on_off(*a))?;
                }
                if let Some(a) = attached {
                    write!(f, " attached={}", on_off(*a))?;
                }
                if let Some(d) = drop_batch {
                    write!(f, " drop_batch={d}")?;
                }
                Ok(())
            }
        }
    }
}
