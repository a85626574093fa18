//! No sequence of host operations panics the simulator (docs/references/design.md §3: bad
//! input is an error, never a panic), and after any sequence the runtime's
//! DML counters still equal the live tensors of the trace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use soc::exec::TraceFiles;

struct NoFiles;

impl TraceFiles for NoFiles {
    fn read(&mut self, p: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other(format!("no file {p}")))
    }
    fn write(&mut self, p: &str, _: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other(format!("no file {p}")))
    }
}

/// One random host statement over a small name space.
fn stmt() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec!["a", "b", "c", "d"]);
    let size = prop::sample::select(vec![1u64, 0x3fff, 0x4000, 0x9000, 0x100001, 0x1000000]);
    prop_oneof![
        (name.clone(), size.clone(), 0u32..8, any::<bool>(), 0u8..3).prop_map(
            |(n, s, nc, host, al)| {
                let align = ["", " align=0x10000", " align=0x4"][al as usize];
                let loc = if host { " host usage=io" } else { "" };
                format!("alloc {n} size={s:#x} nc={nc}{loc}{align}")
            }
        ),
        name.clone().prop_map(|n| format!("free {n}")),
        name.clone().prop_map(|n| format!("acquire {n}")),
        (name.clone(), 0u64..0x2000, 1u64..0x5000)
            .prop_map(|(n, o, l)| format!("copyin {n} pattern=incr8 offset={o:#x} len={l:#x}")),
        (name.clone(), 0u64..0x2000, 1u64..0x5000)
            .prop_map(|(n, o, l)| format!("copyout {n} offset={o:#x} len={l:#x}")),
        (name.clone(), name)
            .prop_map(|(x, y)| format!("batch_copy in tensors={x},{y} len=0x100 byte=7")),
        Just("allocator m nc=1".to_string()),
        Just("alloc e size=0x1000 allocator=m".to_string()),
        Just("allocator_destroy m".to_string()),
        Just("mem_stats".to_string()),
        Just("driver aligned_alloc=off".to_string()),
        Just("runtime zerocopy=on".to_string()),
        Just("expect @a bytes=00".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn host_statements_never_panic(stmts in proptest::collection::vec(stmt(), 1..25)) {
        let source = stmts.join("\n") + "\n";
        let dev = soc::Device::trn2().unwrap();
        let (report, session) =
            host_exec::run_source(dev, &source, "t.trace", &mut NoFiles).unwrap();
        prop_assert_eq!(report.statements, stmts.len());
        // DML per-channel counters = the live device tensors (as the
        // runtime sees them).
        let d = session.dmem();
        let mut per_channel = [0u64; 4];
        for id in d.live_allocations() {
            let m = d.get(id).unwrap();
            if m.mem_type == dmem::MemLocation::TongaDram {
                per_channel[m.tdram_channel as usize] += m.allocated_size_bytes;
            }
        }
        for (c, want) in per_channel.iter().enumerate() {
            prop_assert_eq!(d.logger().memory_usage(c as u32), Some(*want));
        }
    }
}
