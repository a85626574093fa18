//! Packet scheduling: round robin or DWRR among the queues with a ready
//! packet, and the queue and stream rate limiters (docs/references/wiki.md §B.7, §D.4;
//! docs/timing.md "Arbitration and rate limits").

use csr::RegFile;
use sim_core::{Bus, Cycle, TimingConfig};

use super::{Arbitration, Bucket, BucketCfg, DirState, Engine};
use crate::block::QUEUES;

impl Engine {
    /// Picks the next packet round-robin across queues and starts it.
    #[inline(never)]
    pub(super) fn schedule(&mut self, bus: &mut dyn Bus, timing: &TimingConfig) {
        if self.now < self.data_free_at {
            self.schedule_kick(self.data_free_at);
            return;
        }
        if self.state != [DirState::Normal; 2] {
            return;
        }
        let arb = self.cfg.arb;
        let perturbed = self.jitter.is_some();
        // Candidates: queues with a runnable packet, not paused, within
        // their rate limit (docs/timing.md "Arbitration and rate limits").
        // Plain round robin takes the first ready queue; DWRR collects the
        // candidates in a reused buffer (no per-kick array to clear).
        let mut first_ready = None;
        let mut ready = if arb.dwrr || perturbed {
            std::mem::take(&mut self.dwrr_ready)
        } else {
            Vec::new()
        };
        ready.clear();
        // Round robin from `rr_next` over the queues that may have a
        // packet (rotate the mask so bit 0 is `rr_next`). A perturbed
        // schedule (docs/races.md §Schedule perturbation) collects them
        // all, in round-robin order, for [`Engine::perturbed_pick`] (round
        // robin) or [`Engine::perturb_dwrr_arrivals`] (DWRR).
        let rr = self.rr_next % QUEUES;
        let mut pending = self.m2s_maybe_ready.rotate_right(rr as u32);
        while pending != 0 {
            let i = pending.trailing_zeros() as usize;
            pending &= pending - 1;
            let q = ((rr + i) % QUEUES) as u8;
            if self.q[usize::from(q)][0].fetched.is_empty() {
                self.m2s_maybe_ready &= !(1 << q);
                continue;
            }
            let Some(p) = self.ready_packet(q, timing) else {
                continue;
            };
            if arb.dwrr && self.q[usize::from(q)].cfg.dwrr.4 {
                continue; // DWRR pause
            }
            if let Some(wait) = self.queue_bucket_wait(q, p.3) {
                self.schedule_kick(wait);
                continue;
            }
            if !arb.dwrr && !perturbed {
                first_ready = Some(p);
                break; // plain round-robin: the first ready queue wins
            }
            ready.push(p);
        }
        let pick = if arb.dwrr {
            if perturbed {
                self.perturb_dwrr_arrivals(&mut ready);
            }
            let pick = if ready.is_empty() {
                None
            } else {
                self.dwrr_pick(&ready, &arb)
            };
            self.dwrr_ready = ready;
            pick
        } else if perturbed {
            let pick = self.perturbed_pick(&ready);
            self.dwrr_ready = ready;
            pick
        } else {
            first_ready
        };
        let Some(p) = pick else { return };
        if let Some(wait) = self.stream_bucket_wait(p.3) {
            self.schedule_kick(wait);
            return;
        }
        self.consume_tokens(p.0, p.3);
        self.rr_next = (usize::from(p.0) + 1) % QUEUES;
        self.start_packet(p, bus, timing);
        self.schedule_kick(self.data_free_at);
    }

    /// The round robin's pick in a perturbed schedule (docs/races.md
    /// §Schedule perturbation), from the ready queues in round-robin order.
    /// The round robin decides, except for a tie the model's event order
    /// settles: a queue whose packet became ready in this very cycle, ahead
    /// (in round-robin order) of a queue that was waiting already, may or
    /// may not have reached this cycle's arbitration. Each such queue is
    /// taken or passed over by a draw; the first waiting queue wins when
    /// all are passed over. Queues that all became ready together are not
    /// a tie: the round robin orders them.
    fn perturbed_pick(
        &mut self,
        ready: &[(u8, usize, usize, u64)],
    ) -> Option<(u8, usize, usize, u64)> {
        let now = self.now;
        let new = |e: &Engine, q: u8| e.q[usize::from(q) % QUEUES].ready_at >= now;
        let waiting = ready.iter().position(|p| !new(self, p.0));
        let Some(w) = waiting else {
            return ready.first().copied();
        };
        for &p in ready.iter().take(w) {
            let taken = self
                .jitter
                .as_mut()
                .is_none_or(|j| j.arbitration.below(2) == 0);
            if taken {
                return Some(p);
            }
        }
        ready.get(w).copied()
    }

    /// DWRR's open choices in a perturbed schedule (docs/races.md
    /// §Schedule perturbation): the tie of [`Engine::perturbed_pick`], for
    /// deficit round robin. A queue whose packet became ready in this very
    /// cycle, while another queue was waiting already, may or may not have
    /// reached this pick: each such queue stays a candidate by a draw, in
    /// round-robin order. A queue passed over is exactly the queue of a
    /// packet that arrived one cycle later — it gets no quantum in this
    /// pick and is a waiting candidate at the next. Its deficit is kept, so
    /// the bytes each queue moves stay within DWRR's bound. Queues that
    /// all became ready together are not a tie: DWRR orders them.
    fn perturb_dwrr_arrivals(&mut self, ready: &mut Vec<(u8, usize, usize, u64)>) {
        let now = self.now;
        let queues = &self.q;
        let new = |q: u8| queues[usize::from(q) % QUEUES].ready_at >= now;
        if ready.iter().all(|p| new(p.0)) {
            return;
        }
        let Some(j) = self.jitter.as_mut() else {
            return;
        };
        ready.retain(|p| !new(p.0) || j.arbitration.below(2) == 0);
    }

    /// M2S queue `q`'s register at `off` (0 where the map has none).
    #[cfg(test)]
    pub(super) fn q_reg(&self, q: u8, off: Option<u64>) -> u32 {
        let f = &self.regs.q[usize::from(q) % QUEUES][0];
        off.and_then(|o| f.value(o).ok()).unwrap_or(0)
    }

    /// The M2S engine register at `off` (0 where the map has none).
    pub(super) fn m2s_reg(&self, off: Option<u64>) -> u32 {
        off.and_then(|o| self.regs.m2s.value(o).ok()).unwrap_or(0)
    }

    /// The M2S scheduler configuration (docs/references/wiki.md §D.4): DWRR only when
    /// DWRR_CFG_SCHED.EN_DWRR is set and DESC_PREF_CFG_2.PREF_FORCE_RR is
    /// clear; otherwise round-robin among queues.
    pub(super) fn arbitration(&self) -> Arbitration {
        let sched = self.m2s_reg(self.maps.offsets.sched.dwrr_cfg_sched);
        let force_rr = self.m2s_reg(Some(self.maps.offsets.m2s_desc_pref_cfg_2)) & (1 << 16) != 0;
        Arbitration {
            dwrr: sched & 1 != 0 && !force_rr,
            packet_mode: sched & (1 << 4) != 0,
            inc_factor: (sched >> 16) & 0xF,
        }
    }

    /// Deficit-weighted round-robin among the highest (strict, QoS) group.
    pub(super) fn dwrr_pick(
        &mut self,
        ready: &[(u8, usize, usize, u64)],
        arb: &Arbitration,
    ) -> Option<(u8, usize, usize, u64)> {
        let key = |e: &Engine, q: u8| {
            let c = e.q[usize::from(q) % QUEUES].cfg.dwrr;
            (c.0, c.1)
        };
        let best = ready.iter().map(|p| key(self, p.0)).max()?;
        let group: Vec<(u8, usize, usize, u64)> = ready
            .iter()
            .copied()
            .filter(|p| key(self, p.0) == best)
            .collect();

        // Each pass adds a quantum to every queue of the group; the first
        // queue (in round-robin order) whose deficit covers its packet wins.
        for _ in 0..=256 {
            for &p in &group {
                let qi = usize::from(p.0);
                let cost = if arb.packet_mode { 1 } else { p.3 as i64 };
                if self.q[qi].deficit >= cost {
                    self.q[qi].deficit -= cost;
                    return Some(p);
                }
            }
            for &p in &group {
                let qi = usize::from(p.0);
                let weight = i64::from(self.q[qi].cfg.dwrr.2.max(1));
                let quantum = if arb.packet_mode {
                    weight
                } else {
                    weight << arb.inc_factor
                };
                let cap = i64::from(self.q[qi].cfg.dwrr.3);
                self.q[qi].deficit += quantum;
                if cap > 0 {
                    self.q[qi].deficit = self.q[qi].deficit.min(cap.max(quantum));
                }
            }
        }
        group.first().copied()
    }

    /// A token bucket's tokens at `now` (simulator-defined semantics,
    /// docs/timing.md): `TOKEN_SIZE_1` bytes every `SHORT_CYCLE_SIZE ×
    /// (CFG_CYCLE + 1)` cycles, capped at `MAX_BURST_SIZE`; full when enabled.
    pub(super) fn refill(bucket: &mut Bucket, now: Cycle, cfg: BucketCfg) {
        if !bucket.active {
            bucket.active = true;
            bucket.tokens = i64::from(cfg.max_burst);
            bucket.last = now;
            return;
        }
        let period = cfg.period_cycles.max(1);
        let periods = (now.0.saturating_sub(bucket.last.0)) / period;
        if periods > 0 {
            bucket.tokens = (bucket.tokens + periods as i64 * i64::from(cfg.token_bytes))
                .min(i64::from(cfg.max_burst));
            bucket.last = Cycle(bucket.last.0 + periods * period);
        }
    }

    pub(super) fn bucket_cfg(
        &self,
        file: &RegFile<'static>,
        offs: crate::regs::RlimitOffsets,
    ) -> Option<BucketCfg> {
        let get = |o: Option<u64>| o.and_then(|o| file.value(o).ok()).unwrap_or(0);
        let cfg = get(offs.cfg_1s);
        let mask = offs.mask.and_then(|o| file.value(o).ok()).unwrap_or(0x3);
        let enabled = cfg & (1 << 24) != 0 && mask & 0x2 == 0;
        let paused = cfg & (1 << 25) != 0 && mask & 0x2 == 0;
        if !enabled && !paused {
            return None;
        }
        let short = u64::from(self.m2s_reg(self.maps.offsets.sched.rlimit_gen_cfg) & 0xFFFF).max(1);
        Some(BucketCfg {
            max_burst: cfg & 0xFF_FFFF,
            token_bytes: get(offs.token_size_1),
            period_cycles: short * (u64::from(get(offs.cfg_cycle)) + 1),
            paused,
        })
    }

    /// When queue `q`'s rate limiter lets a packet of `bytes` go, if not now.
    pub(super) fn queue_bucket_wait(&mut self, q: u8, bytes: u64) -> Option<Cycle> {
        let qi = usize::from(q) % QUEUES;
        let Some(cfg) = self.q[qi].cfg.bucket else {
            self.q[qi].bucket.active = false;
            return None;
        };
        let now = self.now;
        Self::bucket_wait(&mut self.q[qi].bucket, now, cfg, bytes)
    }

    pub(super) fn stream_bucket_wait(&mut self, bytes: u64) -> Option<Cycle> {
        let Some(cfg) = self.cfg.stream_bucket else {
            self.stream_bucket.active = false;
            return None;
        };
        let now = self.now;
        Self::bucket_wait(&mut self.stream_bucket, now, cfg, bytes)
    }

    pub(super) fn bucket_wait(
        bucket: &mut Bucket,
        now: Cycle,
        cfg: BucketCfg,
        bytes: u64,
    ) -> Option<Cycle> {
        if cfg.paused {
            // Paused: re-check later (a register write also kicks).
            return Some(now.after(cfg.period_cycles.max(1)));
        }
        Self::refill(bucket, now, cfg);
        let need = (bytes as i64).min(i64::from(cfg.max_burst)).max(1);
        if bucket.tokens >= need {
            return None;
        }
        if cfg.token_bytes == 0 {
            return Some(now.after(cfg.period_cycles.max(1)));
        }
        let missing = (need - bucket.tokens) as u64;
        let periods = missing.div_ceil(u64::from(cfg.token_bytes));
        Some(Cycle(bucket.last.0 + periods * cfg.period_cycles.max(1)))
    }

    pub(super) fn consume_tokens(&mut self, q: u8, bytes: u64) {
        let qi = usize::from(q) % QUEUES;
        if self.q[qi].bucket.active {
            self.q[qi].bucket.tokens -= bytes as i64;
        }
        if self.stream_bucket.active {
            self.stream_bucket.tokens -= bytes as i64;
        }
    }
}
