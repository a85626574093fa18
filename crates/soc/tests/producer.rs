//! The executor's software producer index (like a driver's next_desc_idx):
//! a `desc` without a slot placed after a doorbell, before time advances,
//! takes the next slot rather than reusing the one the doorbell posted.
//! (S2M completion writeback is on at reset with its ring at address 0, so
//! the setup turns it off as the driver does; otherwise the first
//! completion entry would overwrite the source bytes at hbm0+0.)
#![allow(clippy::unwrap_used)]

use soc::Device;
use soc::exec::TraceFiles;

struct NoFiles;
impl TraceFiles for NoFiles {
    fn read(&mut self, _: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other("none"))
    }
    fn write(&mut self, _: &str, _: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("none"))
    }
}

const SETUP: &str = "write32 eng4.m2s.q0.tdrbp_low 0x04000000\nwrite32 eng4.m2s.q0.tdrl 32\n\
write32 eng4.s2m.q0.rdrbp_low 0x04000200\nwrite32 eng4.s2m.q0.rdrl 32\n\
write32 eng4.s2m.q0.comp_cfg 0\n\
write32 eng4.m2s.q0.q_cfg 0x03030000\nwrite32 eng4.s2m.q0.q_cfg 0x03030000\n\
write32 eng4.m2s.change_state 1\nwrite32 eng4.s2m.change_state 1\n\
fill hbm0 len=64 byte=7\n";

#[test]
fn desc_after_a_doorbell_takes_the_next_slot() {
    let t = format!(
        "{SETUP}desc eng4.s2m.q0 len=64 dst=hbm1\ndesc eng4.m2s.q0 len=64 src=hbm0 first last\n\
         doorbell eng4.s2m.q0 1\ndoorbell eng4.m2s.q0 1\n\
         desc eng4.s2m.q0 len=64 dst=hbm1+0x100\ndesc eng4.m2s.q0 len=64 src=hbm0 first last\n\
         doorbell eng4.s2m.q0 1\ndoorbell eng4.m2s.q0 1\nrun\n\
         expect hbm1 bytes=07070707\nexpect hbm1+0x100 bytes=07070707\n\
         read32 eng4.m2s.q0.tdrhp == 0x40000002\nread32 eng4.gen.sec_a_int_cause == 0\n"
    );
    let mut dev = Device::trn2().unwrap();
    let r = soc::exec::run_source(&mut dev, &t, "t", &mut NoFiles).unwrap();
    assert_eq!(r.exit_code(), 0, "{}", r.to_text());
}

#[test]
fn reprogramming_the_ring_restarts_the_producer_at_the_hardware_tail() {
    let t = format!(
        "{SETUP}desc eng4.m2s.q0 len=64 src=hbm0 first last\n\
         desc eng4.m2s.q0 len=64 src=hbm0 first last\n\
         write32 eng4.m2s.q0.q_sw_ctrl 0x100\n\
         desc eng4.m2s.q0 len=64 src=hbm0 first last\n"
    );
    let mut dev = Device::trn2().unwrap();
    let r = soc::exec::run_source(&mut dev, &t, "t", &mut NoFiles).unwrap();
    let text = r.to_text();
    assert!(text.contains("desc eng4.m2s.q0[1]"), "{text}");
    // After RST_Q the producer starts again at the (reset) tail, slot 0.
    let last = r.steps.last().unwrap();
    assert!(
        last.text.starts_with("desc eng4.m2s.q0[0]"),
        "{}",
        last.text
    );
}
