//! Completion polling (docs/firmware.md §Stalls): the rings
//! the firmware owns, the words in flight, completion heads read back into
//! positions, and the EVENTS updates applied when a word is done.

use super::*;

/// One queue pair the firmware owns.
#[derive(Clone, Debug)]
pub(super) struct Rings {
    pub(super) queue: u8,
    pub(super) len: u32,
    pub(super) addrs: RingAddrs,
    /// Absolute producer positions (descriptors ever posted + the seed).
    pub(super) m2s_pos: u64,
    pub(super) s2m_pos: u64,
}

impl Rings {
    pub(super) fn slot(&self, pos: u64) -> (u32, u8) {
        let len = u64::from(self.len);
        let (wraps, idx) = div_rem(pos, len);
        let id = ((u64::from(INITIAL_RING_ID) + wraps) & 3) as u8;
        (idx as u32, id)
    }

    /// Completed position from a completion-head register value.
    pub(super) fn done(&self, pos: u64, crhp: u32) -> u64 {
        let len = u64::from(self.len);
        let span = 4 * len;
        // A head index within the ring (every one the engine writes)
        // needs no divide.
        let head = u64::from(crhp & 0xFF_FFFF);
        let off = if head < len { head } else { head % len };
        let id = u64::from(crhp >> 30);
        let c_mod = ((id + 3) & 3) * len + off;
        let (_, p_mod) = div_rem(pos, span);
        // p_mod + span - c_mod is in 1 ..= 2 × span - 1.
        let back = p_mod + span - c_mod;
        pos - if back >= span { back - span } else { back }
    }
}

/// `(n / d, n % d)`, by shift and mask for a power-of-two `d` (the usual
/// ring length; a 64-bit divide costs the host tens of cycles, and every
/// completion poll and descriptor store asks).
fn div_rem(n: u64, d: u64) -> (u64, u64) {
    if d.is_power_of_two() {
        (n >> d.trailing_zeros(), n & (d - 1))
    } else {
        (n / d, n % d)
    }
}

/// One engine queue of a group a polling core waits on
/// ([`Q7Core::wake_needs`]): the further completed descriptors per
/// direction the group needs of it (`None`: none of that direction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeNeed {
    /// Engine id.
    pub engine: u16,
    /// Queue index.
    pub queue: u8,
    /// M2S descriptors still to complete before a read could be done.
    pub m2s: Option<u64>,
    /// S2M descriptors still to complete before a write could be done.
    pub s2m: Option<u64>,
}

fn max_some(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

/// One slot as [`Q7Core::wake_needs`] sees it: (engine id, queue, its
/// rings, M2S done, S2M done).
type SlotState<'a> = (u16, u8, &'a Rings, u64, u64);

/// Whether group `later` lists the queues of `earlier` in the same order
/// and needs at least as many completions of each, in each direction that
/// `earlier` needs: then `later` met implies `earlier` met.
fn needs_no_less(later: &[WakeNeed], earlier: &[WakeNeed]) -> bool {
    let covers = |need: Option<u64>, have: Option<u64>| match (need, have) {
        (None, _) => true,
        (Some(a), Some(b)) => a <= b,
        (Some(_), None) => false,
    };
    later.len() == earlier.len()
        && later.iter().zip(earlier).all(|(l, e)| {
            l.engine == e.engine
                && l.queue == e.queue
                && covers(e.m2s, l.m2s)
                && covers(e.s2m, l.s2m)
        })
}

/// Adds a need to a group (all of whose entries must be met): two targets
/// on one queue need the larger count.
fn add_need(group: &mut Vec<WakeNeed>, engine: u16, queue: u8, m2s: Option<u64>, s2m: Option<u64>) {
    match group
        .iter_mut()
        .find(|w| w.engine == engine && w.queue == queue)
    {
        Some(w) => {
            w.m2s = max_some(w.m2s, m2s);
            w.s2m = max_some(w.s2m, s2m);
        }
        None => group.push(WakeNeed {
            engine,
            queue,
            m2s,
            s2m,
        }),
    }
}

/// An issued instruction still moving data.
#[derive(Clone, Debug)]
pub(super) struct Inflight {
    pub(super) tag: InstTag,
    /// The word's kind name (for stall reports).
    pub(super) kind: &'static str,
    /// (engine slot, M2S target, S2M target) absolute positions.
    pub(super) targets: Vec<(u8, u64, u64)>,
    pub(super) update: Option<(UpdateMode, u8, u32)>,
    pub(super) read_done: bool,
}

impl Q7Core {
    /// Whether the firmware's next run only re-reads state that the DMA
    /// engines change: completion heads of in-flight words, ring space, the
    /// inline path's completion tag, an iDMA fill's completion head. Such a
    /// run finds what the previous one found unless the device changed in
    /// between; the device uses this to see a stall (docs/firmware.md
    /// §Stalls).
    pub fn polling_only(&self) -> bool {
        match &self.stage {
            Stage::Idle => {
                (!self.inflight.is_empty() || self.blocked_on_space)
                    && self.release_pending().is_none()
            }
            Stage::Inline(x) => x.wait.is_some(),
            Stage::Icache { .. } => true,
            Stage::Generating { .. } | Stage::CoreCopy { .. } => false,
        }
    }

    /// The cycle the current stage ends by itself (descriptor generation,
    /// a core-side copy); until then a run only polls the words in flight
    /// (docs/firmware.md §Stalls).
    pub fn busy_until(&self) -> Option<Cycle> {
        match &self.stage {
            Stage::Generating { until, .. } => Some(*until),
            // The next cycle whose bytes the copy moves.
            Stage::CoreCopy {
                until,
                start,
                rate,
                done,
                ..
            } => Some(Cycle((start.0 + done / rate + 1).min(until.0))),
            _ => None,
        }
    }

    /// Whether a run now could read a semaphore: a word at the head of the
    /// queue may test its EVENTS gate, or a stage reads state this model
    /// does not narrow down. A run while generating, copying, or idle with
    /// nothing queued reads only completion heads (docs/firmware.md
    /// §Stalls).
    pub fn reads_semaphores(&self) -> bool {
        match &self.stage {
            Stage::Generating { .. } | Stage::CoreCopy { .. } => false,
            Stage::Idle => !self.queue.is_empty(),
            Stage::Inline(_) | Stage::Icache { .. } => true,
        }
    }

    /// Whether the firmware's polls read memory (the inline path's
    /// completion tag), which any engine's write can change; otherwise they
    /// read only completion heads of the core's own engines, and a change
    /// elsewhere cannot end the wait (docs/firmware.md §Stalls).
    pub fn polls_memory(&self) -> bool {
        matches!(self.stage, Stage::Inline(_))
    }

    /// When the firmware only polls for words in flight, what its next
    /// state change needs: groups of per-queue needs, one group per change
    /// a poll could make — a word whose reads are done (when that applies
    /// an EVENTS update) or a word that is done. Each entry is an engine
    /// queue with the further completed descriptors (M2S, S2M) it still
    /// needs; a group is met when every entry is. Until some group is met
    /// every poll reads heads that end no wait and changes nothing, so the
    /// device need not wake the core for completions short of it
    /// (docs/firmware.md §Stalls). The counts are from the heads the last
    /// poll read; `None` when the wait is of another kind (the inline
    /// path, a pending release), a head was not read, or a group is
    /// met already (the next poll changes state). A word waiting for ring
    /// room adds a group: the completions on that engine queue that free
    /// the room it needs.
    pub fn wake_needs(&self) -> Option<Vec<Vec<WakeNeed>>> {
        let polls_heads_only = matches!(
            self.stage,
            Stage::Idle | Stage::Generating { .. } | Stage::CoreCopy { .. }
        );
        if !polls_heads_only || (self.inflight.is_empty() && !self.blocked_on_space) {
            return None;
        }
        // Per slot, from the heads the last poll read: (engine, queue, ring,
        // M2S done, S2M done), recovered once however many words use it.
        let mut at: [Option<SlotState<'_>>; SLOTS] = [None; SLOTS];
        let mut slot_state = |slot: u8| -> Option<SlotState<'_>> {
            let i = usize::from(slot);
            if let Some(Some(v)) = at.get(i) {
                return Some(*v);
            }
            let r = self.rings.get(i)?.as_ref()?;
            let e = self.layout.engines.get(i)?;
            let seen = self.heads_seen.get(i)?.get()?;
            let addrs = (
                e.m2s_q(r.queue) + self.layout.regs.crhp,
                e.s2m_q(r.queue) + self.layout.regs.crhp,
            );
            if seen.addrs != addrs {
                return None;
            }
            let v = (
                e.id,
                r.queue,
                r,
                r.done(r.m2s_pos, seen.values.0),
                r.done(r.s2m_pos, seen.values.1),
            );
            if let Some(a) = at.get_mut(i) {
                *a = Some(v);
            }
            Some(v)
        };
        let mut groups: Vec<Vec<WakeNeed>> = Vec::with_capacity(self.inflight.len() + 1);
        if self.blocked_on_space {
            // The word at the head of the queue waits for room on one
            // engine's rings: a retry can start it once both have it.
            let (slot, need_m2s, need_s2m) = self.space_wait?;
            let (engine, queue, r, m_done, s_done) = slot_state(slot)?;
            let len = u64::from(r.len);
            // Room when pos - done + need <= len, i.e. done >= pos + need - len.
            let short = |pos: u64, need: u64, done: u64| {
                let want = (pos + need).saturating_sub(len);
                (want > done).then(|| want - done)
            };
            let m = short(r.m2s_pos, need_m2s, m_done);
            let s = short(r.s2m_pos, need_s2m, s_done);
            if m.is_none() && s.is_none() {
                return None;
            }
            groups.push(vec![WakeNeed {
                engine,
                queue,
                m2s: m,
                s2m: s,
            }]);
        }
        // The last done group kept: a later word on the same queues that
        // needs at least as much of each is done only after it, so its own
        // group adds nothing (queues complete in ring order).
        let mut last_done: Option<usize> = None;
        for f in &self.inflight {
            // A poll that finds this word's reads done changes what users
            // see only when that applies the read-side update.
            let reads_update =
                !f.read_done && matches!(f.update, Some((UpdateMode::SemIncRead, _, _)));
            let mut reads: Vec<WakeNeed> = Vec::new();
            let mut done: Vec<WakeNeed> = Vec::with_capacity(f.targets.len());
            for &(slot, m_target, s_target) in &f.targets {
                let (engine, queue, _, m_done, s_done) = slot_state(slot)?;
                let m = (!f.read_done && m_done < m_target).then(|| m_target - m_done);
                let s = (s_done < s_target).then(|| s_target - s_done);
                if reads_update && m.is_some() {
                    add_need(&mut reads, engine, queue, m, None);
                }
                if m.is_some() || s.is_some() {
                    add_need(&mut done, engine, queue, m, s);
                }
            }
            if (reads_update && reads.is_empty()) || done.is_empty() {
                return None;
            }
            if reads_update {
                groups.push(reads);
            }
            if last_done.is_some_and(|k| needs_no_less(&done, &groups[k])) {
                continue;
            }
            last_done = Some(groups.len());
            groups.push(done);
        }
        Some(groups)
    }

    /// What the firmware is polling for, one entry per engine queue it
    /// waits on (a stall report: docs/firmware.md §Stalls). `bus` is read
    /// for the completion heads; pass one without side effects.
    pub fn waits(&self, bus: &mut dyn FwBus) -> Vec<FwWait> {
        let mut out = Vec::new();
        for f in &self.inflight {
            for &(slot, m_target, s_target) in &f.targets {
                let (Some(e), Some(Some(r))) = (
                    self.layout.engines.get(usize::from(slot)),
                    self.rings.get(usize::from(slot)),
                ) else {
                    continue;
                };
                let Some((m_done, s_done)) = self.completed(bus, slot) else {
                    continue;
                };
                if m_done >= m_target && s_done >= s_target {
                    continue;
                }
                out.push(FwWait {
                    inst: f.tag.clone(),
                    kind: f.kind.to_string(),
                    engine: e.id,
                    queue: r.queue,
                    waiting_for: format!(
                        "completions: M2S at {m_done} of {m_target}, S2M at {s_done} of {s_target} \
                         (ring positions)"
                    ),
                });
            }
        }
        if self.blocked_on_space
            && let Some(q) = self.queue.front()
            && let Some((slot, need_m2s, need_s2m)) = self.space_wait
            && let (Some(e), Some(Some(r))) = (
                self.layout.engines.get(usize::from(slot)),
                self.rings.get(usize::from(slot)),
            )
        {
            let (m_done, s_done) = self.completed(bus, slot).unwrap_or((0, 0));
            let len = u64::from(r.len);
            let free = |pos: u64, done: u64| len.saturating_sub(pos.saturating_sub(done));
            let unrung = self
                .unrung
                .iter()
                .filter(|(s, ..)| *s == slot)
                .map(|(_, m, s)| format!(" ({m} M2S and {s} S2M written by RDMA_DESC_GEN wait for an RDMA_DESC_START)"))
                .next()
                .unwrap_or_default();
            out.push(FwWait {
                inst: q.tag.clone(),
                kind: q.work.name().to_string(),
                engine: e.id,
                queue: r.queue,
                waiting_for: format!(
                    "ring room: needs {need_m2s} M2S and {need_s2m} S2M slots of {len}, \
                     {} and {} free{unrung}",
                    free(r.m2s_pos, m_done),
                    free(r.s2m_pos, s_done)
                ),
            });
        }
        match &self.stage {
            Stage::Inline(x) => {
                if let Some((slot, tag)) = x.wait {
                    out.push(FwWait {
                        inst: x.tag.clone(),
                        kind: "neuron_memcpy".into(),
                        engine: self.layout.engines.first().map_or(0, |e| e.id),
                        queue: crate::inline::INLINE_QUEUE,
                        waiting_for: format!(
                            "the inline completion ring slot {slot} to carry tag {tag}"
                        ),
                    });
                }
            }
            Stage::Icache { tag, target, .. } => out.push(FwWait {
                inst: tag.clone(),
                kind: "start_fill_siram".into(),
                engine: self.layout.engines.first().map_or(0, |e| e.id),
                queue: self.icache.as_ref().map_or(0, |(_, r)| r.queue),
                waiting_for: format!("S2M completion up to position {target}"),
            }),
            _ => {}
        }
        out
    }

    pub(super) fn completed(&self, bus: &mut dyn FwBus, slot: u8) -> Option<(u64, u64)> {
        let r = self.rings.get(usize::from(slot))?.as_ref()?;
        let e = self.layout.engines.get(usize::from(slot))?;
        let addrs = (
            e.m2s_q(r.queue) + self.layout.regs.crhp,
            e.s2m_q(r.queue) + self.layout.regs.crhp,
        );
        // Nothing moved in the engine since the last read of these heads:
        // they read the same (unless every read is observed).
        let seen = self.heads_seen.get(usize::from(slot));
        let cached = !bus.logs_reads();
        if cached
            && let (Some(seen), Some(epoch)) = (seen, bus.engine_epoch(e.id))
            && let Some(h) = seen.get()
            && h.epoch == epoch
            && h.addrs == addrs
        {
            let (m_pos, s_pos, m_done, s_done) = h.done;
            if (m_pos, s_pos) == (r.m2s_pos, r.s2m_pos) {
                return Some((m_done, s_done));
            }
            let (m, s) = h.values;
            let done = (r.done(r.m2s_pos, m), r.done(r.s2m_pos, s));
            seen.set(Some(HeadsSeen {
                done: (r.m2s_pos, r.s2m_pos, done.0, done.1),
                ..h
            }));
            return Some(done);
        }
        let m = bus.read32(addrs.0).ok()?;
        let s = bus.read32(addrs.1).ok()?;
        let done = (r.done(r.m2s_pos, m), r.done(r.s2m_pos, s));
        if cached && let (Some(seen), Some(epoch)) = (seen, bus.engine_epoch(e.id)) {
            seen.set(Some(HeadsSeen {
                epoch,
                addrs,
                values: (m, s),
                done: (r.m2s_pos, r.s2m_pos, done.0, done.1),
            }));
        }
        Some(done)
    }

    pub(super) fn has_room(
        &self,
        bus: &mut dyn FwBus,
        slot: u8,
        need_m2s: u64,
        need_s2m: u64,
    ) -> bool {
        let Some(r) = self.rings.get(usize::from(slot)).and_then(Option::as_ref) else {
            return false;
        };
        let Some((m_done, s_done)) = self.completed(bus, slot) else {
            return false;
        };
        let len = u64::from(r.len);
        r.m2s_pos - m_done + need_m2s <= len && r.s2m_pos - s_done + need_s2m <= len
    }

    /// Applies finished instructions' EVENTS updates, oldest first.
    pub(super) fn poll_inflight(&mut self, now: Cycle, bus: &mut dyn FwBus) {
        // Each queue's heads, read once per poll unless every read is
        // observed ([`FwBus::logs_reads`]).
        let mut heads: [Option<Option<(u64, u64)>>; SLOTS] = [None; SLOTS];
        let once = !bus.logs_reads();
        let mut i = 0;
        while i < self.inflight.len() {
            let (reads, writes) = {
                let f = &self.inflight[i];
                let mut reads = true;
                let mut writes = true;
                for &(slot, m_target, s_target) in &f.targets {
                    let done = match heads.get_mut(usize::from(slot)) {
                        Some(h) if once => *h.get_or_insert_with(|| self.completed(bus, slot)),
                        _ => self.completed(bus, slot),
                    };
                    match done {
                        Some((m, s)) => {
                            reads &= m >= m_target;
                            writes &= s >= s_target;
                        }
                        None => {
                            reads = false;
                            writes = false;
                        }
                    }
                }
                (reads, writes)
            };
            let f = &mut self.inflight[i];
            if reads && !f.read_done {
                f.read_done = true;
                if let Some((UpdateMode::SemIncRead, idx, _)) = f.update {
                    let tag = f.tag.clone();
                    let text = self.apply_update(bus, UpdateMode::SemIncRead, idx, 0);
                    self.event(now, &tag, FwEventKind::ReadDone { update: text });
                }
            }
            if writes && self.inflight[i].read_done {
                let Some(f) = self.inflight.remove(i) else {
                    break;
                };
                let update = match f.update {
                    Some((m, idx, v)) if m != UpdateMode::SemIncRead => {
                        Some(self.apply_update(bus, m, idx, v))
                    }
                    _ => None,
                };
                self.event(now, &f.tag, FwEventKind::Done { update });
            } else {
                i += 1;
            }
        }
    }

    /// One EVENTS update (docs/references/wiki.md §C.3); returns its description.
    pub(super) fn apply_update(
        &mut self,
        bus: &mut dyn FwBus,
        mode: UpdateMode,
        idx: u8,
        value: u32,
    ) -> String {
        let name = mode.name().unwrap_or("?");
        let r = match mode {
            UpdateMode::SemIncRead | UpdateMode::SemIncComplete => bus
                .write32(self.layout.sem_inc(idx), 1)
                .map(|()| format!("sem[{idx}] += 1")),
            UpdateMode::SemAddImmComplete => bus
                .write32(self.layout.sem_inc(idx), value)
                .map(|()| format!("sem[{idx}] += {value}")),
            UpdateMode::SemWrRegComplete => {
                let reg = (value & 63) as u8;
                let v = bus.read32(self.layout.reg(reg)).unwrap_or(0);
                bus.write32(self.layout.sem_set(idx), v)
                    .map(|()| format!("sem[{idx}] = REG[{reg}] = {v}"))
            }
            UpdateMode::None | UpdateMode::Other(_) => Ok(String::new()),
        };
        match r {
            Ok(t) => format!("{name} {t}"),
            Err(m) => format!("{name} failed: {m}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    pub(super) fn rings(len: u32) -> Rings {
        Rings {
            queue: 0,
            len,
            addrs: RingAddrs {
                m2s_ring: 0,
                s2m_ring: 0,
                m2s_comp: 0,
                s2m_comp: 0,
            },
            m2s_pos: 0,
            s2m_pos: 0,
        }
    }

    /// The completion-head register value after `done` descriptors
    /// (docs/references/driver.md §3.6: ring id 1 after reset, +1 mod 4 per wrap).
    pub(super) fn crhp(len: u32, done: u64) -> u32 {
        let id = (u64::from(INITIAL_RING_ID) + done / u64::from(len)) & 3;
        ((id as u32) << 30) | (done % u64::from(len)) as u32
    }

    #[test]
    pub(super) fn slot_and_ring_id_follow_the_wraps() {
        let r = rings(4);
        assert_eq!(r.slot(0), (0, 1));
        assert_eq!(r.slot(3), (3, 1));
        assert_eq!(r.slot(4), (0, 2));
        assert_eq!(r.slot(12), (0, 0));
        assert_eq!(r.slot(16), (0, 1));
    }

    proptest::proptest! {
        /// Slots and completed positions equal their divide-everything
        /// forms, for power-of-two and other ring lengths, any head value.
        #[test]
        fn slot_and_done_equal_the_divide_forms(
            len in proptest::prop_oneof![1u32..300, (0u32..10).prop_map(|k| 1u32 << k)],
            pos in 0u64..u64::MAX / 8,
            crhp in proptest::num::u32::ANY,
        ) {
            let r = rings(len);
            let l = u64::from(len);
            let slot = ((pos % l) as u32, ((u64::from(INITIAL_RING_ID) + pos / l) & 3) as u8);
            proptest::prop_assert_eq!(r.slot(pos), slot);
            let span = 4 * l;
            let c_mod = ((u64::from(crhp >> 30) + 3) & 3) * l + u64::from(crhp & 0xFF_FFFF) % l;
            let done = pos - (pos % span + span - c_mod) % span;
            proptest::prop_assert_eq!(r.done(pos, crhp), done);
        }
    }

    proptest::proptest! {
        #[test]
        fn completed_position_is_recovered_from_the_head_register(
            len in 1u32..300,
            pos in 0u64..100_000,
            outstanding in 0u64..300,
        ) {
            let r = rings(len);
            let outstanding = outstanding.min(u64::from(len)).min(pos);
            let done = pos - outstanding;
            proptest::prop_assert_eq!(r.done(pos, crhp(len, done)), done);
        }
    }
}
