//! The six words, typed: every field by its P9.1 §2 name, validated on
//! decode, and encoded back to the zerocopy layouts of [`super::raw`].
//!
//! Each word is declared once with the `word!` macro: the field list (in byte order)
//! gives the struct, its decoder and encoder, its JSON form and its text-form
//! leaves. The opcode (and the extended opcode of the RDMA words) is implied
//! by the type; reserved bytes are not fields — they must be zero.

use serde::Serialize;
use soc_map::{Addr4, Addr8};

use super::field::{Leaf, Problem, SetError, Text, Wire, split_path};
use super::raw::{
    RawDirect2d, RawDirect2dXpose, RawGatherXpose, RawIndirect1d, RawRdmaDescGen, RawRdmaDescStart,
    WORD_BYTES,
};
use super::types::{
    BoundCheckReg, CompletionInfo, ComputeOp, DmaConfigs, Dtype, DtypePair, Events,
    GatherXposeFlags, Header, ImmVal, IndirectFlags,
};
use super::{InstError, InstKind, InstWord};

/// Extended opcode of RDMA_DESC_GEN (byte 12 of an EXTENDED word).
pub const EXT_RDMA_DESC_GEN: u8 = 8;
/// Extended opcode of RDMA_DESC_START.
pub const EXT_RDMA_DESC_START: u8 = 9;

fn hex_bytes(bytes: &[u8]) -> String {
    let digits: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("[{digits}]")
}

fn no_check<T>(_: &T) -> Result<(), Problem> {
    Ok(())
}

macro_rules! word {
    (
        $(#[$doc:meta])*
        pub struct $name:ident ($raw:ident, $kind:ident) {
            $( $(#[$fattr:meta])* $field:ident : $ty:ty, )*
        }
        fixed { $( $fixed:ident = $fval:expr, )* }
        reserved { $( $res:ident, )* }
        check = $check:path;
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
        pub struct $name {
            $( $(#[$fattr])* pub $field: $ty, )*
        }

        impl Default for $name {
            /// Every field zero / inert; `inst_word_len` 4.
            fn default() -> Self {
                Self { $( $field: <$ty as Text>::initial(), )* }
            }
        }

        impl $name {
            /// The kind of this word.
            pub const KIND: InstKind = InstKind::$kind;

            /// The seed names of the top-level fields, in byte order.
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($field)),*];

            pub(crate) fn from_raw(raw: &$raw) -> Result<Self, Problem> {
                $(
                    if raw.$fixed != $fval {
                        return Err(Problem::new(raw.$fixed, format!("must be {}", $fval))
                            .at(stringify!($fixed)));
                    }
                )*
                let word = Self {
                    $( $field: <$ty as Wire>::from_raw(raw.$field)
                        .map_err(|p| p.at(stringify!($field)))?, )*
                };
                $(
                    if raw.$res.iter().any(|b| *b != 0) {
                        return Err(Problem::new(hex_bytes(&raw.$res), "reserved, must be zero")
                            .at(stringify!($res)));
                    }
                )*
                $check(&word)?;
                Ok(word)
            }

            pub(crate) fn to_raw(self) -> Result<$raw, Problem> {
                let mut raw = $raw::zeroed();
                $(
                    raw.$field = <$ty as Wire>::to_raw(&self.$field)
                        .map_err(|p| p.at(stringify!($field)))?;
                )*
                raw.header.opcode = InstKind::$kind.opcode();
                $( raw.$fixed = $fval; )*
                Ok(raw)
            }

            /// Decodes 64 bytes that must hold this kind of word.
            pub fn decode(bytes: &[u8; WORD_BYTES]) -> Result<Self, InstError> {
                match InstWord::decode(bytes)? {
                    InstWord::$kind(w) => Ok(w),
                    other => Err(InstError::wrong_kind(Self::KIND, other.kind())),
                }
            }

            /// Encodes to 64 bytes, validating every field as
            /// [`Self::decode`] does.
            pub fn encode(&self) -> Result<[u8; WORD_BYTES], InstError> {
                InstWord::$kind(*self).encode()
            }

            pub(crate) fn leaves(&self) -> Vec<Leaf> {
                let mut out = Vec::new();
                $( Text::leaves(&self.$field, stringify!($field), &mut out); )*
                out
            }

            pub(crate) fn set(&mut self, path: &str, value: &str) -> Result<(), SetError> {
                let (head, rest) = split_path(path);
                match head {
                    $( stringify!($field) => Text::set(&mut self.$field, rest, value), )*
                    _ => Err(SetError::Unknown { name: head.to_string(), known: Self::FIELDS }),
                }
            }
        }

        impl From<$name> for InstWord {
            fn from(w: $name) -> Self {
                InstWord::$kind(w)
            }
        }
    };
}

word! {
    /// D1 DIRECT2D, opcode 0xb8: a 2-D strided memcpy (P9.1 §2.2). With
    /// `compute_op` other than NONE the transfer goes through the CCE path.
    pub struct Direct2d (RawDirect2d, Direct2d) {
        /// +0 (the opcode is implied).
        #[serde(skip)]
        header: Header,
        /// +4.
        events: Events,
        /// +12.
        dma_configs: DmaConfigs,
        /// +13: completion semaphore index.
        semaphore: u8,
        /// +14.
        sem_increment: u8,
        /// +15.
        compute_op: ComputeOp,
        /// +16.
        #[serde(serialize_with = "super::json::addr8")]
        #[schemars(with = "super::json::Addr8Decode")]
        src_start_addr: Addr8,
        /// +24: signed x/y strides in elements.
        src_step_elem: [i32; 2],
        /// +32: x/y counts.
        src_num_elem: [u16; 2],
        /// +36.
        src_elem_size: u16,
        /// +38.
        src_bound_reg: BoundCheckReg,
        /// +39.
        dst_bound_reg: BoundCheckReg,
        /// +40.
        #[serde(serialize_with = "super::json::addr8")]
        #[schemars(with = "super::json::Addr8Decode")]
        dst_start_addr: Addr8,
        /// +48.
        dst_step_elem: [i32; 2],
        /// +56.
        dst_num_elem: [u16; 2],
        /// +60.
        dst_elem_size: u16,
        /// +62.
        in_dtype: Dtype,
        /// +63.
        out_dtype: Dtype,
    }
    fixed {}
    reserved {}
    check = no_check;
}

word! {
    /// D2 INDIRECT1D, opcode 0xbb: gather / scatter through index arrays
    /// in SBUF (P9.1 §2.3, docs/references/wiki.md §G.1).
    pub struct Indirect1d (RawIndirect1d, Indirect1d) {
        /// +0 (the opcode is implied).
        #[serde(skip)]
        header: Header,
        /// +4.
        events: Events,
        /// +12.
        semaphore: u8,
        /// +13.
        sem_increment: u8,
        /// +14 (the firmware requires 128).
        idx_num_active_channels: u8,
        /// +15.
        flags: IndirectFlags,
        /// +16.
        #[serde(serialize_with = "super::json::addr8")]
        #[schemars(with = "super::json::Addr8Decode")]
        src_start_addr: Addr8,
        /// +24.
        src_step_elem: i32,
        /// +28.
        src_num_elem: u16,
        /// +30.
        src_elem_size: u16,
        /// +32.
        #[serde(serialize_with = "super::json::addr8")]
        #[schemars(with = "super::json::Addr8Decode")]
        dst_start_addr: Addr8,
        /// +40.
        dst_step_elem: i32,
        /// +44.
        dst_num_elem: u16,
        /// +46.
        dst_elem_size: u16,
        /// +48: the source index array.
        #[serde(serialize_with = "super::json::addr4")]
        #[schemars(with = "super::json::Addr4Decode")]
        src_idx_start_addr: Addr4,
        /// +52: the destination index array.
        #[serde(serialize_with = "super::json::addr4")]
        #[schemars(with = "super::json::Addr4Decode")]
        dst_idx_start_addr: Addr4,
        /// +56.
        in_dtype: Dtype,
        /// +57.
        out_dtype: Dtype,
        /// +58: gates the source indices.
        src_idx_bound_reg: BoundCheckReg,
        /// +59: gates the destination indices.
        dst_idx_bound_reg: BoundCheckReg,
        /// +60: not NONE = scatter-reduce.
        compute_op: ComputeOp,
        /// +61.
        dma_configs: DmaConfigs,
    }
    fixed {}
    reserved { reserved, }
    check = indirect1d_check;
}

/// docs/references/wiki.md §G.1: an index bound gate that suppresses the OOB notification
/// is valid only when an out-of-bounds index is an error
/// (`idx_bound_is_err == 1 || bc_disable_oob_error_notif == 0`).
fn indirect1d_check(w: &Indirect1d) -> Result<(), Problem> {
    for (name, reg) in [
        ("src_idx_bound_reg", w.src_idx_bound_reg),
        ("dst_idx_bound_reg", w.dst_idx_bound_reg),
    ] {
        if reg.bc_disable_oob_error_notif && !w.flags.idx_bound_is_err {
            let raw = reg.to_raw()?;
            return Err(Problem::new(
                format!("{raw:#04x}"),
                "bc_disable_oob_error_notif = 1 needs flags.idx_bound_is_err = 1: \
                 a silent index bound check that is not an error is invalid",
            )
            .at(name));
        }
    }
    Ok(())
}

word! {
    /// D4 DIRECT2D_XPOSE, opcode 0xbd: tile-geometry transpose through the
    /// axi2sram cross-bar, no index array (P9.1 §2.5).
    pub struct Direct2dXpose (RawDirect2dXpose, Direct2dXpose) {
        /// +0 (the opcode is implied).
        #[serde(skip)]
        header: Header,
        /// +4.
        events: Events,
        /// +12.
        src_bound_reg: BoundCheckReg,
        /// +13.
        dst_bound_reg: BoundCheckReg,
        /// +14.
        in_dtype: Dtype,
        /// +15 (the firmware requires it equal to in_dtype).
        out_dtype: Dtype,
        /// +16.
        #[serde(serialize_with = "super::json::addr8")]
        #[schemars(with = "super::json::Addr8Decode")]
        src_start_addr: Addr8,
        /// +24.
        src_step_elem: [i32; 2],
        /// +32.
        src_num_elem: [u16; 2],
        /// +36.
        tile_src_row_step: i32,
        /// +40.
        #[serde(serialize_with = "super::json::addr8")]
        #[schemars(with = "super::json::Addr8Decode")]
        dst_start_addr: Addr8,
        /// +48.
        dst_step_elem: [i32; 2],
        /// +56.
        dst_num_elem: [u16; 2],
        /// +60 (the firmware requires 16).
        tile_src_rows: u8,
        /// +61.
        tile_src_cols: u8,
        /// +62.
        semaphore: u8,
        /// +63.
        dma_configs: DmaConfigs,
    }
    fixed {}
    reserved {}
    check = no_check;
}

word! {
    /// D3 GATHER_XPOSE, opcode 0xf1: index-driven gather with transpose
    /// (P9.1 §2.4, docs/references/wiki.md §G.2).
    pub struct GatherXpose (RawGatherXpose, GatherXpose) {
        /// +0 (the opcode is implied).
        #[serde(skip)]
        header: Header,
        /// +4.
        events: Events,
        /// +12.
        semaphore: u8,
        /// +13.
        dma_configs: DmaConfigs,
        /// +14 (the firmware requires 128).
        idx_num_active_channels: u8,
        /// +15.
        src_idx_bound_reg: BoundCheckReg,
        /// +16.
        #[serde(serialize_with = "super::json::addr8")]
        #[schemars(with = "super::json::Addr8Decode")]
        src_start_addr: Addr8,
        /// +24: signed.
        src_step_elem: [i32; 2],
        /// +32.
        src_num_elem: [u16; 2],
        /// +36: the UINT32 index array.
        #[serde(serialize_with = "super::json::addr4")]
        #[schemars(with = "super::json::Addr4Decode")]
        src_idx_start_addr: Addr4,
        /// +40.
        #[serde(serialize_with = "super::json::addr8")]
        #[schemars(with = "super::json::Addr8Decode")]
        dst_start_addr: Addr8,
        /// +51.
        dst_bound_reg: BoundCheckReg,
        /// +52: dst stride 1 (stride 0 is sizeof(dtype_hi)).
        dst_step_elem_1: i32,
        /// +56.
        dst_num_elem: [u16; 2],
        /// +60.
        elem_size: u16,
        /// +62: lo nibble src, hi nibble dst.
        dtype: DtypePair,
        /// +63.
        flags: GatherXposeFlags,
    }
    fixed {}
    reserved { reserved, }
    check = no_check;
}

word! {
    /// D5 RDMA_DESC_GEN: header opcode 0xf0 (EXTENDED), extended opcode 8 at
    /// byte 12; SBUF→SBUF between cores (P9.1 §2.6, docs/references/wiki.md §C.5, §E).
    pub struct RdmaDescGen (RawRdmaDescGen, RdmaDescGen) {
        /// +0 (the opcode is implied).
        #[serde(skip)]
        header: Header,
        /// +4.
        events: Events,
        /// +13.
        completion_info: CompletionInfo,
        /// +14: incremented by all 16 engines when triggering is done.
        local_sem: u8,
        /// +15: incremented on the peer when all bytes land.
        remote_sem: u8,
        /// +16.
        remote_core_id: ImmVal,
        /// +20.
        remote_routing_id: ImmVal,
        /// +24: a 16-bit engine mask whose population is 1, 2, 4, 8 or 16.
        dma_engine_mask: ImmVal,
        /// +28: local SBUF partition offset.
        #[serde(serialize_with = "super::json::addr4")]
        #[schemars(with = "super::json::Addr4Decode")]
        src_addr: Addr4,
        /// +32: peer partition offset.
        #[serde(serialize_with = "super::json::addr4")]
        #[schemars(with = "super::json::Addr4Decode")]
        dst_addr: Addr4,
        /// +36: bytes per partition (0 = semaphore only).
        free_dim_bytes: u32,
        /// +40 (not supported by the firmware).
        is_bidirectional: u8,
        /// +41.
        remote_sem_prev: u8,
    }
    fixed { extended_opcode = EXT_RDMA_DESC_GEN, }
    reserved { reserved0, reserved1, }
    check = no_check;
}

word! {
    /// D6 RDMA_DESC_START: header opcode 0xf0 (EXTENDED), extended opcode 9;
    /// no operands — the wait of the transfer lives in `events`.
    pub struct RdmaDescStart (RawRdmaDescStart, RdmaDescStart) {
        /// +0 (the opcode is implied).
        #[serde(skip)]
        header: Header,
        /// +4.
        events: Events,
        /// +13.
        completion_info: CompletionInfo,
    }
    fixed { extended_opcode = EXT_RDMA_DESC_START, }
    reserved { reserved0, reserved1, }
    check = no_check;
}
