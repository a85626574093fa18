//! The Q7 core's own copies (`neuron_memcpy` methods 0 and 1, docs/firmware.md
//! §The custom-op inline path): what the core can reach, and when the bytes
//! it copies become visible.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{read_at, run_trace as run};
use soc::Device;

fn read(d: &Device, addr: &str, len: usize) -> Vec<u8> {
    read_at(d, common::addr(d, addr), len)
}

/// Design §2 (docs/references/design.md; wiki §A.4): the Q7 cores have no
/// aperture onto PSUM. A core copy that reads or writes PSUM is refused,
/// naming PSUM, and moves nothing; the same copy through the DMA (method 2,
/// the default) is the DMA engine's and reaches PSUM.
#[test]
fn a_core_copy_cannot_reach_psum() {
    for method in [0, 1] {
        let (r, d) = run(&format!(
            "fill tpb0.psum[p0] len=256 pattern=incr32\n\
             memcpy_method tpb0 {method}\n\
             memcpy tpb0 local=0x80000 hbm=tpb0.psum[p0] len=256 read\n\
             memcpy tpb0 local=0x80100 hbm=tpb0.psum[p1] len=256 write\n\
             run\n"
        ));
        let refused = &r.summary.firmware["tpb0"].refused;
        assert_eq!(refused.len(), 2, "method {method}: {}", r.to_text());
        for x in refused {
            assert!(
                x.refusal.reason.contains("PSUM")
                    && x.refusal.reason.contains("the Q7 cores cannot reach"),
                "method {method}: {}",
                x.refusal.reason
            );
        }
        assert_eq!(read(&d, "tpb0.q7_dram0", 8), [0; 8], "method {method}");
        assert_eq!(read(&d, "tpb0.psum[p1]", 8), [0; 8], "method {method}");
    }
    // The default method's DMA reads PSUM.
    let (r, d) = run("fill tpb0.psum[p0] len=256 pattern=incr32\n\
         memcpy tpb0 local=0x80000 hbm=tpb0.psum[p0] len=256 read\n\
         run\n");
    assert!(
        r.summary.firmware["tpb0"].refused.is_empty(),
        "{}",
        r.to_text()
    );
    assert_eq!(read(&d, "tpb0.q7_dram0", 8), [0, 0, 0, 0, 1, 0, 0, 0]);
}

/// Design §4: the cycle of every visible change is exact. A 4 KiB scalar
/// copy at `q7_scalar_copy_bytes_per_cycle` = 4 takes 1024 cycles; the
/// bytes of cycle `c` land at `c` — 8 bytes by cycle 2, 2 KiB by 512 —
/// and a store to the source before its bytes are copied is what lands.
#[test]
fn a_core_copy_lands_its_bytes_cycle_by_cycle() {
    let (r, d) = run("fill hbm0+0x70000000 len=4096 pattern=incr8\n\
         memcpy_method tpb0 0\n\
         memcpy tpb0 local=0x80000 hbm=hbm0+0x70000000 len=4096 read\n\
         run cycles=2\n");
    assert!(
        r.failures.is_empty() && r.errors.is_empty(),
        "{}",
        r.to_text()
    );
    assert_eq!(
        read(&d, "tpb0.q7_dram0", 12),
        [0, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0]
    );
    assert_eq!(read(&d, "tpb0.q7_dram0+0xffc", 4), [0; 4]);

    let (_, d) = run("fill hbm0+0x70000000 len=4096 pattern=incr8\n\
         memcpy_method tpb0 0\n\
         memcpy tpb0 local=0x80000 hbm=hbm0+0x70000000 len=4096 read\n\
         run cycles=512\n\
         write hbm0+0x70000ffc bytes=aabbccdd\n\
         run\n");
    assert_eq!(
        read(&d, "tpb0.q7_dram0+0x7fc", 8),
        [0xfc, 0xfd, 0xfe, 0xff, 0, 1, 2, 3]
    );
    // Stored to the source while the copy ran: the new bytes were copied.
    assert_eq!(read(&d, "tpb0.q7_dram0+0xffc", 4), [0xaa, 0xbb, 0xcc, 0xdd]);
    assert_eq!(d.now().0, 1024);
}

/// A 64-bit register pair needs `REG[r + 1]`; the file has 64 registers,
/// so a pair at `REG[63]` (an address, a wide table offset, a wide bound)
/// is refused naming the field, not read with `REG[0]` as its high half.
#[test]
fn a_register_pair_cannot_start_at_reg_63() {
    let (r, _) = run(
        "write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x00400000\n\
         write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff\n\
         write32 tpb0.q7_local_reg.addr_table_lo[3] 0x10000000\n\
         write32 tpb0.q7_local_reg.reg[63] 0xffffffff\n\
         inst tpb0 DIRECT2D semaphore=1 sem_increment=1 src_start_addr=tbl:3+wide:0x0 src_bound_reg.bc_reg=63 src_bound_reg.bc_enabled=1 src_step_elem=[1,256] src_num_elem=[256,1] src_elem_size=1 dst_start_addr=imm:0x10100000 dst_step_elem=[1,256] dst_num_elem=[256,1] dst_elem_size=1\n\
         inst tpb0 DIRECT2D semaphore=2 sem_increment=1 src_start_addr=tbl:3+wreg:63 src_step_elem=[1,256] src_num_elem=[256,1] src_elem_size=1 dst_start_addr=imm:0x10200000 dst_step_elem=[1,256] dst_num_elem=[256,1] dst_elem_size=1\n\
         inst tpb0 DIRECT2D semaphore=3 sem_increment=1 src_start_addr=reg:63 src_step_elem=[1,256] src_num_elem=[256,1] src_elem_size=1 dst_start_addr=imm:0x10200000 dst_step_elem=[1,256] dst_num_elem=[256,1] dst_elem_size=1\n\
         inst tpb0 DIRECT2D semaphore=4 sem_increment=1 src_start_addr=reg:62 src_step_elem=[1,256] src_num_elem=[256,1] src_elem_size=1 dst_start_addr=imm:0x10200000 dst_step_elem=[1,256] dst_num_elem=[256,1] dst_elem_size=1\n\
         run\n",
    );
    let reasons: Vec<&str> = r.summary.firmware["tpb0"]
        .refused
        .iter()
        .map(|x| x.refusal.reason.as_str())
        .collect();
    assert_eq!(reasons.len(), 3, "{}", r.to_text());
    assert!(
        reasons[0].contains(
            "DIRECT2D.src_bound_reg.bc_reg = 63: a wide-offset bound is a 64-bit register pair"
        ),
        "{reasons:?}"
    );
    assert!(
        reasons[1]
            .contains("DIRECT2D.src_start_addr: a 64-bit register pair cannot start at REG[63]"),
        "{reasons:?}"
    );
    assert!(
        reasons[2]
            .contains("DIRECT2D.src_start_addr: a 64-bit register pair cannot start at REG[63]"),
        "{reasons:?}"
    );
}
