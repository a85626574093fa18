//! `inflight`: what is under way in the device (docs/user-guide.md §12
//! "Views") — per engine, the descriptors its queues have fetched and not
//! completed (packets in flight) and those posted behind them; the agent
//! the scheduler steps next; per core, the words queued and in flight, and
//! what each polling word waits on.

use soc::exec::queue_target;
use soc::{Device, NextPick};
use udma::{Dir, DirState};

use super::ring::RingState;

fn state(s: DirState) -> &'static str {
    match s {
        DirState::Disabled => "disabled",
        DirState::Normal => "normal",
        DirState::Aborted => "aborted",
    }
}

/// The `inflight` view as text.
pub fn show_inflight(device: &Device) -> String {
    let mut out = match device.next_pick() {
        Some(NextPick::Engine { at, engine }) => {
            format!("next pick: eng{engine} (its next event) at cycle {at}\n")
        }
        Some(NextPick::Firmware { at, tpb }) => {
            format!("next pick: tpb{tpb} firmware at cycle {at}\n")
        }
        None => "next pick: nothing pending (engines idle, no firmware run due)\n".to_string(),
    };
    let mut engines = 0;
    for e in device.engines() {
        let id = e.id();
        let mut lines = Vec::new();
        for dir in ["m2s", "s2m"] {
            for q in 0..udma::QUEUES {
                let Some(target) = queue_target(device, &format!("eng{id}.{dir}.q{q}")) else {
                    continue;
                };
                let Some(st) = RingState::read(device, &target) else {
                    continue;
                };
                let (fetched, posted) = if st.len == 0 {
                    (0, 0)
                } else {
                    (st.fetched(), st.posted())
                };
                if fetched + posted > 0 {
                    lines.push(format!(
                        "    {}: {fetched} descriptors in flight (fetched, packet not done), {posted} posted behind them\n",
                        target.region
                    ));
                }
            }
        }
        let next = e.next_event().map(|c| c.0);
        if lines.is_empty() && next.is_none() {
            continue;
        }
        engines += 1;
        out.push_str(&format!(
            "  eng{id}: m2s {}, s2m {}; next event {}\n",
            state(e.dir_state(Dir::M2s)),
            state(e.dir_state(Dir::S2m)),
            next.map_or("none".to_string(), |c| format!("at cycle {c}"))
        ));
        for l in lines {
            out.push_str(&l);
        }
    }
    if engines == 0 {
        out.push_str("  no engine has work under way\n");
    }
    let waits = device.fw_waits();
    let mut busy = 0;
    for core in device.cores() {
        let tpb = core.tpb();
        if core.queued() + core.in_flight() == 0 {
            continue;
        }
        busy += 1;
        out.push_str(&format!(
            "  tpb{tpb} firmware: {} words queued, {} in flight\n",
            core.queued(),
            core.in_flight()
        ));
        for w in waits.iter().filter(|w| w.core == format!("tpb{tpb}")) {
            out.push_str(&format!("    {}\n", w.describe(true)));
        }
    }
    if busy == 0 {
        out.push_str("  firmware: no core has words queued or in flight\n");
    }
    out
}
