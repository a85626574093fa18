//! Write-barrier and SOW ordering across queues (docs/references/driver.md §3.3–3.4 and
//! §4.7, docs/timing.md): writes to host memory take the PCIe latency, so a
//! small HBM write on another queue lands first — unless its TX word1 has
//! write_barrier or its RX descriptor has SOW, which hold it until every
//! earlier write of the engine has landed.
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

/// Landing cycles of (queue 0's packet into host memory, queue 1's small
/// packet into HBM).
fn landing(flags_q1_tx: &str, flags_q1_rx: &str) -> (u64, u64) {
    let mut t = String::new();
    for q in 0..2 {
        t += &format!(
            "write32 eng20.m2s.q{q}.tdrbp_low {:#x}\nwrite32 eng20.m2s.q{q}.tdrl 32\n\
             write32 eng20.s2m.q{q}.rdrbp_low {:#x}\nwrite32 eng20.s2m.q{q}.rdrl 32\n\
             write32 eng20.m2s.q{q}.q_cfg 0x03030000\nwrite32 eng20.s2m.q{q}.q_cfg 0x03030000\n",
            0x0800_0000 + q * 0x1000,
            0x0800_0800 + q * 0x1000
        );
    }
    t += "write32 eng20.m2s.change_state 1\nwrite32 eng20.s2m.change_state 1\n";
    t += "desc eng20.s2m.q0 len=4096 dst=host+0x10000\ndesc eng20.m2s.q0 len=4096 src=hbm0 first last\n";
    t += &format!("desc eng20.s2m.q1 len=64 dst=hbm1+0x100000 {flags_q1_rx}\n");
    t += &format!("desc eng20.m2s.q1 len=64 src=hbm0 first last {flags_q1_tx}\n");
    t += "doorbell eng20.s2m.q0 1\ndoorbell eng20.s2m.q1 1\ndoorbell eng20.m2s.q0 1\ndoorbell eng20.m2s.q1 1\nrun\n";
    let mut dev = Device::trn2().unwrap();
    let r = soc::exec::run_source(&mut dev, &t, "t", &mut NoFiles).unwrap();
    assert_eq!(r.exit_code(), 0, "{}", r.to_text());
    let q = |name: &str| r.summary.queues[name].last_cycle.unwrap();
    (q("eng20.q0"), q("eng20.q1"))
}

#[test]
fn a_small_hbm_write_overtakes_a_host_write_without_a_barrier() {
    let (host, hbm) = landing("", "");
    assert!(hbm < host, "hbm {hbm} host {host}");
}

#[test]
fn write_barrier_waits_for_every_earlier_write() {
    let (host, hbm) = landing("write_barrier", "");
    assert!(hbm > host, "hbm {hbm} host {host}");
}

#[test]
fn sow_waits_for_every_earlier_write() {
    let (host, hbm) = landing("", "sow");
    assert!(hbm > host, "hbm {hbm} host {host}");
}
