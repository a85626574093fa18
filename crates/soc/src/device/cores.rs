//! The Q7 firmware cores of the device: created on first use, booted,
//! given words and calls, and run in the device's cycle order
//! (docs/firmware.md; parking: docs/firmware.md §Stalls).

use super::*;

impl Device {
    /// Queues a 64-byte instruction word on core `tpb`'s firmware; it runs
    /// from the current cycle on. `source` says where the word came from.
    pub fn submit_inst(
        &mut self,
        tpb: u8,
        word: InstWord,
        source: String,
    ) -> Result<InstTag, DeviceError> {
        if self.fabric.race.is_some() {
            self.race_submit(tpb);
        }
        let core = self.core_mut(tpb)?;
        let tag = core.submit(word, source);
        self.wake_core_now(tpb);
        Ok(tag)
    }

    /// Queues a firmware call (custom-op code: `neuron_memcpy`,
    /// `neuron_set_memcpy_method`) on core `tpb`, in order with its words.
    pub fn submit_call(
        &mut self,
        tpb: u8,
        call: q7::FwCall,
        source: String,
    ) -> Result<InstTag, DeviceError> {
        if self.fabric.race.is_some() {
            self.race_submit(tpb);
        }
        let core = self.core_mut(tpb)?;
        let tag = core.submit_call(call, source);
        self.wake_core_now(tpb);
        Ok(tag)
    }

    /// Core `tpb`'s firmware, created on first use.
    pub(super) fn core_mut(&mut self, tpb: u8) -> Result<&mut Q7Core, DeviceError> {
        let i = usize::from(tpb);
        if tpb >= crate::firmware::CORES {
            return Err(DeviceError(format!(
                "core tpb{tpb} does not exist (the device has tpb0..tpb{})",
                crate::firmware::CORES - 1
            )));
        }
        if self.cores.len() <= i {
            self.cores.resize_with(i + 1, || None);
            self.fw_next.resize(i + 1, None);
            self.fw_seen.resize(i + 1, u64::MAX);
            self.parked.resize(i + 1, None);
            self.park_needs.resize(i + 1, None);
        }
        if self.cores[i].is_none() {
            let layout =
                crate::firmware::core_layout_of(&self.fabric.map, self.fabric.catalog, tpb)
                    .map_err(|m| DeviceError(format!("tpb{tpb} firmware: {m}")))?;
            for e in &layout.engines {
                let id = usize::from(e.id);
                if self.engine_cores.len() <= id {
                    self.engine_cores.resize(id + 1, 0);
                }
                self.engine_cores[id] |= 1 << tpb;
            }
            let mut core = Q7Core::new(layout);
            core.set_trace(self.trace);
            self.cores[i] = Some(core);
        }
        self.cores[i]
            .as_mut()
            .ok_or_else(|| DeviceError(format!("tpb{tpb}: no firmware")))
    }

    /// Boots every core's Q7 firmware (DGE mailbox defaults); the trace
    /// executor does this before a trace's first statement, as the runtime
    /// talks to booted cores only (P9.1 §5.4). Idempotent.
    pub fn boot_firmware(&mut self) -> Result<(), DeviceError> {
        for tpb in 0..crate::firmware::CORES {
            self.core_mut(tpb)?;
            let i = usize::from(tpb);
            let Some(mut core) = self.cores.get_mut(i).and_then(Option::take) else {
                continue;
            };
            let prev = self.set_bus_master(Master::Firmware(tpb));
            let r = {
                let mut bus = crate::firmware::DeviceFwBus { device: self };
                core.boot(&mut bus)
            };
            self.set_bus_master(prev);
            self.cores[i] = Some(core);
            r.map_err(|m| DeviceError(format!("tpb{tpb} firmware boot: {m}")))?;
        }
        Ok(())
    }

    /// The firmware of core `tpb`, if it has run anything.
    pub fn core(&self, tpb: u8) -> Option<&Q7Core> {
        self.cores.get(usize::from(tpb)).and_then(Option::as_ref)
    }

    /// Every core with firmware.
    pub fn cores(&self) -> impl Iterator<Item = &Q7Core> {
        self.cores.iter().flatten()
    }

    /// Schedules the firmware of cores whose semaphores changed. A parked
    /// core whose run now would read no semaphore and find no wait ended
    /// is not run: what that run would do — restart its polls from now —
    /// is done in place (docs/firmware.md §Stalls).
    pub(super) fn wake_touched_cores(&mut self) {
        let touched = std::mem::take(&mut self.fabric.sem_touched);
        if touched == 0 {
            return;
        }
        self.sem_epoch += 1;
        for i in 0..self.cores.len() {
            if self.cores[i].is_none() || touched & (1 << i) == 0 {
                continue;
            }
            if self.sem_wake_is_idle_poll(i) {
                self.restart_parked_polls(i);
                continue;
            }
            let now = self.now;
            let slot = &mut self.fw_next[i];
            *slot = Some(slot.map_or(now, |t| t.min(now)));
        }
    }

    /// Whether running parked core `i` now would only poll heads that end
    /// no wait: it reads no semaphore ([`Q7Core::reads_semaphores`]), no
    /// group of its wake needs is met, and no register log records every
    /// read. (The race detector loses nothing: a poll that ends no wait
    /// joins a completion clock the next poll that does joins again, later,
    /// and the waits it notes are begun and ended by runs that change
    /// state.)
    fn sem_wake_is_idle_poll(&self, i: usize) -> bool {
        if self.fabric.rec.is_some() {
            return false;
        }
        let (Some(Some(core)), Some(Some(_)), Some(Some(needs))) = (
            self.cores.get(i),
            self.parked.get(i),
            self.park_needs.get(i),
        ) else {
            return false;
        };
        !core.reads_semaphores() && !self.park_needs_met(needs)
    }

    /// What a run of parked core `i` now that changes nothing leaves: its
    /// next poll one period from now (or its stage's end, if that comes
    /// first), still parked on the same needs.
    fn restart_parked_polls(&mut self, i: usize) {
        let now = self.now;
        let next_poll = Cycle(now.0 + self.timing.q7_poll_cycles.max(1));
        let until = self.cores[i].as_ref().and_then(Q7Core::busy_until);
        if until.is_some_and(|u| next_poll >= u) {
            self.unpark(i);
        } else {
            self.parked[i] = Some(next_poll);
        }
        if let Some(seen) = self.fw_seen.get_mut(i) {
            *seen = self.activity;
        }
    }

    /// The earliest scheduled firmware run: (cycle, core).
    pub(super) fn next_fw(&self) -> Option<(Cycle, u8)> {
        self.fw_next
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.map(|t| (t, i as u8)))
            .min()
    }

    /// Runs core `tpb`'s firmware at the current cycle.
    pub(super) fn run_core(&mut self, tpb: u8) {
        let i = usize::from(tpb);
        let Some(mut core) = self.cores.get_mut(i).and_then(Option::take) else {
            if let Some(s) = self.fw_next.get_mut(i) {
                *s = None;
            }
            return;
        };
        // A core that runs is not parked (a semaphore change can schedule a
        // parked core without unparking it).
        self.unpark(i);
        let now = self.now;
        self.cur_key = (now.0, 0, u16::from(tpb));
        let timing = std::sync::Arc::clone(&self.timing);
        let prev = self.set_bus_master(Master::Firmware(tpb));
        let next = {
            let mut bus = crate::firmware::DeviceFwBus { device: self };
            core.step(now, &mut bus, &timing)
        };
        self.set_bus_master(prev);
        for e in core.take_events() {
            self.fabric.events.push(DeviceEvent::Firmware(e));
        }
        if self.fabric.race.is_some() {
            self.race_core_waits(tpb, &core);
        }
        let polling = core.polling_only();
        let on_memory = core.polls_memory();
        let busy_until = if polling { None } else { core.busy_until() };
        let needs = if polling || busy_until.is_some() {
            core.wake_needs()
        } else {
            None
        };
        self.cores[i] = Some(core);
        self.fw_next[i] = next;
        if let Some(seen) = self.fw_seen.get_mut(i) {
            *seen = self.activity;
        }
        // A core that only polls waits, parked, for the next change; while
        // recording, it polls one by one so that the log has every read.
        if polling
            && self.fabric.rec.is_none()
            && let Some(n) = next.filter(|n| *n > now)
        {
            self.fw_next[i] = None;
            // The needs it parked on last time are not read again: their
            // buffers are reused.
            let old = self.park_needs[i].take();
            self.park_needs[i] = needs.and_then(|n| self.park_needs_at(&n, old));
            self.park(i, n, on_memory);
        } else if let Some(until) = busy_until
            && self.fabric.rec.is_none()
            && let Some(n) = next.filter(|n| *n > now && *n < until)
            && let Some(groups) = needs.and_then(|n| {
                let old = self.park_needs[i].take();
                self.park_needs_at(&n, old)
            })
        {
            // Generating or copying until `until`, it polls the words in
            // flight meanwhile: it runs at `until`, and before that only
            // when a change could end a wait — parked on its polls.
            self.fw_next[i] = Some(until);
            self.park_needs[i] = Some(groups);
            self.park(i, n, false);
        }
        // The firmware's own semaphore updates need not wake it again.
        if self.fabric.sem_touched & (1 << tpb) != 0 {
            self.fabric.sem_touched &= !(1 << tpb);
            self.sem_epoch += 1;
        }
        if let Some(n) = next
            && n <= now
        {
            self.fw_next[i] = Some(Cycle(now.0 + 1));
        }
    }
}
