//! Synthetic streaming workloads for benchmarks and scale measurements:
//! single-descriptor HBM→HBM packets on every chosen queue, rings and queues
//! programmed as the driver does (`traces/queue-setup.trace`), every
//! doorbell rung, so that [`Device::run`] moves the whole workload.

use crate::device::{Device, DeviceError};

/// Ring area inside hbm0 (the first 16 MiB are the firmware carve-out).
pub const RINGS_OFFSET: u64 = 0x1000_0000;
/// Source data inside hbm0.
pub const SRC_OFFSET: u64 = 0x1_0000_0000;
/// Destination data inside hbm0.
pub const DST_OFFSET: u64 = 0x2_0000_0000;
/// The byte the source is filled with.
pub const SRC_BYTE: u8 = 0xA5;
/// The byte the destination is filled with (when pre-touched).
pub const DST_BYTE: u8 = 0x5A;

/// `descs` copies of `desc_bytes` each, spread evenly over queues
/// `0..queues` of engines `0..engines`: one TX (FIRST|LAST) and one RX
/// descriptor per copy, ring id 1, no completion rings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamCopy {
    /// Payload bytes per descriptor (1..=65536; 65536 is LEN 0).
    pub desc_bytes: u32,
    /// Copies (TX descriptors = RX descriptors = packets) in all.
    pub descs: u32,
    /// Queues used on each engine (1..=16).
    pub queues: u32,
    /// Engines used, from engine 0 (TPB 0 has 16).
    pub engines: u32,
    /// Fill the source with [`SRC_BYTE`] (its pages exist).
    pub fill_src: bool,
    /// Fill the destination with [`DST_BYTE`] (pre-touched pages).
    pub fill_dst: bool,
}

impl StreamCopy {
    /// Copies per queue.
    #[must_use]
    pub fn per_queue(&self) -> u32 {
        self.descs / (self.queues * self.engines).max(1)
    }

    /// Payload bytes in all.
    #[must_use]
    pub fn total_bytes(&self) -> u64 {
        u64::from(self.desc_bytes) * u64::from(self.descs)
    }

    /// Programs `dev` (fills, registers, descriptors, doorbells).
    ///
    /// # Errors
    ///
    /// A register or memory the workload needs is not there, or the shape
    /// is out of range (zero or too many queues, engines or bytes).
    pub fn program(&self, dev: &mut Device) -> Result<(), DeviceError> {
        if !(1..=16).contains(&self.queues)
            || self.engines == 0
            || !(1..=65536).contains(&self.desc_bytes)
            || self.per_queue() == 0
        {
            return Err(DeviceError(format!(
                "workload {self:?}: needs 1..=16 queues, engines, 1..=65536 bytes and a copy per queue"
            )));
        }
        let hbm = addr(dev, "hbm0")?;
        if self.fill_src {
            fault(dev.fill(hbm + SRC_OFFSET, self.total_bytes(), SRC_BYTE))?;
        }
        if self.fill_dst {
            fault(dev.fill(hbm + DST_OFFSET, self.total_bytes(), DST_BYTE))?;
        }
        let per_q = self.per_queue();
        let ring_bytes = 16 * u64::from(per_q);
        let size = u64::from(self.desc_bytes);
        for e in 0..self.engines {
            let eng = format!("eng{e}");
            // As the driver: max packet 1 MiB − 1, LEN 0 encodes 64 KiB;
            // prefetch refill threshold 65, bursts of 8 above it
            // (docs/references/driver.md §2.7).
            reg(dev, &format!("{eng}.m2s.cfg_len"), 0x010F_FFFF)?;
            reg(dev, &format!("{eng}.m2s.desc_pref_cfg_3"), 0x0000_4181)?;
            reg(dev, &format!("{eng}.s2m.desc_pref_cfg_3"), 0x0000_4181)?;
            for q in 0..self.queues {
                // Rings and data of (engine, queue) number k.
                let k = u64::from(e * self.queues + q);
                let tx_ring = hbm + RINGS_OFFSET + 2 * ring_bytes * k;
                let rx_ring = tx_ring + ring_bytes;
                let m2s = format!("{eng}.m2s.q{q}");
                let s2m = format!("{eng}.s2m.q{q}");
                reg(dev, &format!("{m2s}.tdrbp_low"), tx_ring as u32)?;
                reg(dev, &format!("{m2s}.tdrbp_high"), (tx_ring >> 32) as u32)?;
                reg(dev, &format!("{m2s}.tdrl"), per_q)?;
                reg(dev, &format!("{s2m}.rdrbp_low"), rx_ring as u32)?;
                reg(dev, &format!("{s2m}.rdrbp_high"), (rx_ring >> 32) as u32)?;
                reg(dev, &format!("{s2m}.rdrl"), per_q)?;
                // No completion rings; DMB pauses the queue.
                reg(dev, &format!("{m2s}.comp_cfg"), 0)?;
                reg(dev, &format!("{s2m}.comp_cfg"), 0)?;
                reg(dev, &format!("{m2s}.rlimit_mask"), 0x3)?;
                reg(dev, &format!("{m2s}.q_cfg"), 0x0303_0000)?;
                reg(dev, &format!("{s2m}.q_cfg"), 0x0303_0000)?;
                let mut tx_bytes = Vec::with_capacity(ring_bytes as usize);
                let mut rx_bytes = Vec::with_capacity(ring_bytes as usize);
                for i in 0..u64::from(per_q) {
                    let at = (k * u64::from(per_q) + i) * size;
                    let len_err = |e: dma_abi::LenError| DeviceError(format!("workload: {e}"));
                    let tx = dma_abi::tx(
                        self.desc_bytes,
                        hbm + SRC_OFFSET + at,
                        dma_abi::Flags::single(1),
                    )
                    .map_err(len_err)?;
                    let rx = dma_abi::rx(self.desc_bytes, hbm + DST_OFFSET + at)
                        .map_err(len_err)?
                        .with_flags(dma_abi::Flags {
                            ring_id: 1,
                            ..dma_abi::Flags::default()
                        });
                    tx_bytes.extend_from_slice(&tx.to_bytes());
                    rx_bytes.extend_from_slice(&rx.to_bytes());
                }
                fault(dev.write_bytes(tx_ring, &tx_bytes))?;
                fault(dev.write_bytes(rx_ring, &rx_bytes))?;
            }
            reg(dev, &format!("{eng}.m2s.change_state"), 1)?;
            reg(dev, &format!("{eng}.s2m.change_state"), 1)?;
            for q in 0..self.queues {
                reg(dev, &format!("{eng}.s2m.q{q}.rdrtp_inc"), per_q)?;
                reg(dev, &format!("{eng}.m2s.q{q}.tdrtp_inc"), per_q)?;
            }
        }
        Ok(())
    }
}

fn fault<T>(r: Result<T, crate::BusFault>) -> Result<T, DeviceError> {
    r.map_err(|e| DeviceError(e.to_string()))
}

fn addr(dev: &Device, text: &str) -> Result<u64, DeviceError> {
    let expr = trace_format::parse_addr(text, "workload")
        .map_err(|e| DeviceError(format!("`{text}`: {e}")))?;
    crate::resolve(dev, &expr)
        .map(|r| r.addr)
        .map_err(|e| DeviceError(format!("`{text}`: {}", e.message)))
}

fn reg(dev: &mut Device, name: &str, value: u32) -> Result<(), DeviceError> {
    let a = addr(dev, name)?;
    fault(dev.write32(a, value)).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::RunStop;

    #[test]
    fn every_copy_lands_on_every_engine_and_queue() {
        let w = StreamCopy {
            desc_bytes: 4096,
            descs: 64,
            queues: 2,
            engines: 4,
            fill_src: true,
            fill_dst: true,
        };
        let mut dev = Device::trn2().unwrap();
        w.program(&mut dev).unwrap();
        assert_eq!(dev.run(None), RunStop::Idle);
        let stats = dev.queue_stats();
        assert_eq!(stats.len(), 8, "{stats:?}");
        for (_, _, s) in &stats {
            assert_eq!((s.packets, s.bytes), (8, 8 * 4096));
        }
        let hbm = addr(&dev, "hbm0").unwrap();
        let mut buf = vec![0u8; 64 * 4096];
        dev.read_bytes(hbm + DST_OFFSET, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == SRC_BYTE));
    }

    #[test]
    fn bad_shapes_are_errors() {
        let mut dev = Device::trn2().unwrap();
        for w in [
            StreamCopy {
                queues: 0,
                descs: 4,
                desc_bytes: 512,
                engines: 1,
                fill_src: false,
                fill_dst: false,
            },
            StreamCopy {
                queues: 17,
                descs: 34,
                desc_bytes: 512,
                engines: 1,
                fill_src: false,
                fill_dst: false,
            },
            StreamCopy {
                queues: 1,
                descs: 4,
                desc_bytes: 0,
                engines: 1,
                fill_src: false,
                fill_dst: false,
            },
            StreamCopy {
                queues: 2,
                descs: 1,
                desc_bytes: 512,
                engines: 1,
                fill_src: false,
                fill_dst: false,
            },
        ] {
            assert!(w.program(&mut dev).is_err(), "{w:?}");
        }
    }
}
