//! A plain DIRECT2D copy (no compute op, no dtype) whose two sides name
//! different element sizes: the reference's validity rule is equal byte
//! totals, Σ num × elem_size (docs/references/wiki.md §C.5), so it copies
//! bytes (docs/firmware.md §DIRECT2D expansion).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{read_at as read, run_trace as run};
use soc::exec::RunReport;

const DGE: &str = "write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x00400000\n\
     write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff\n\
     fill hbm0+0x10000000 len=1024 pattern=incr8\n";

fn refusals(r: &RunReport) -> Vec<String> {
    r.summary
        .firmware
        .get("tpb0")
        .map(|c| c.refused.iter().map(|x| x.refusal.reason.clone()).collect())
        .unwrap_or_default()
}

#[test]
fn equal_byte_totals_copy_bytes_whatever_the_element_sizes() {
    // 2 rows of 256 one-byte elements → 2 rows of 128 two-byte elements,
    // destination rows 512 bytes apart.
    let (r, d) = run(&format!(
        "{DGE}inst tpb0 DIRECT2D semaphore=1 sem_increment=1 \
         src_start_addr=imm:0x10000000 src_step_elem=[1,256] src_num_elem=[256,2] src_elem_size=1 \
         dst_start_addr=imm:0x10100000 dst_step_elem=[1,256] dst_num_elem=[128,2] dst_elem_size=2\n\
         run\n"
    ));
    assert!(refusals(&r).is_empty(), "{}", r.to_text());
    let src = read(&d, 0x1000_0000, 512);
    assert_eq!(read(&d, 0x1010_0000, 256), src[..256]);
    assert_eq!(read(&d, 0x1010_0200, 256), src[256..]);
    assert_eq!(read(&d, 0x1010_0100, 16), [0; 16], "the gap between rows");
}

#[test]
fn different_byte_totals_and_strided_elements_of_different_sizes_are_refused() {
    let (r, _) = run(&format!(
        "{DGE}inst tpb0 DIRECT2D semaphore=1 sem_increment=1 \
         src_start_addr=imm:0x10000000 src_step_elem=[1,256] src_num_elem=[256,1] src_elem_size=1 \
         dst_start_addr=imm:0x10100000 dst_step_elem=[1,256] dst_num_elem=[256,1] dst_elem_size=2\n\
         inst tpb0 DIRECT2D semaphore=1 sem_increment=1 \
         src_start_addr=imm:0x10000000 src_step_elem=[2,512] src_num_elem=[256,1] src_elem_size=1 \
         dst_start_addr=imm:0x10100000 dst_step_elem=[1,256] dst_num_elem=[128,1] dst_elem_size=2\n\
         run\n"
    ));
    let reasons = refusals(&r);
    assert_eq!(reasons.len(), 2, "{}", r.to_text());
    assert!(
        reasons[0].contains("256 bytes") && reasons[0].contains("512 bytes"),
        "{reasons:?}"
    );
    assert!(reasons[1].contains("not modelled yet"), "{reasons:?}");
}
