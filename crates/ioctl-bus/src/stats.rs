//! Ioctl counts by name (`neuron-sim`'s "ioctl count by kind").

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{IoctlError, Transport, UserMemory};

/// The driver name of `request` (`ioctl_abi::lookup`), or `"unknown"`.
#[must_use]
pub fn ioctl_name(request: u32) -> &'static str {
    ioctl_abi::lookup(request).map_or("unknown", |def| def.name)
}

/// Calls through a transport, counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IoctlStats {
    /// Every call (ioctls and mmap loads/stores).
    pub calls: u64,
    /// Calls that failed (errno or bus).
    pub errors: u64,
    /// Ioctls by driver name ([`ioctl_name`]).
    pub by_name: BTreeMap<String, u64>,
    /// Loads from mmapped driver memory.
    pub mmap_reads: u64,
    /// Stores to mmapped driver memory.
    pub mmap_writes: u64,
}

impl IoctlStats {
    /// Counts one ioctl.
    pub fn count_ioctl(&mut self, request: u32, ok: bool) {
        let name = ioctl_name(request);
        match self.by_name.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                self.by_name.insert(name.to_string(), 1);
            }
        }
        self.count(ok);
    }

    /// Counts one mmap load.
    pub fn count_mmap_read(&mut self, ok: bool) {
        self.mmap_reads += 1;
        self.count(ok);
    }

    /// Counts one mmap store.
    pub fn count_mmap_write(&mut self, ok: bool) {
        self.mmap_writes += 1;
        self.count(ok);
    }

    fn count(&mut self, ok: bool) {
        self.calls += 1;
        if !ok {
            self.errors += 1;
        }
    }

    /// Ioctls counted (all names).
    #[must_use]
    pub fn ioctls(&self) -> u64 {
        self.by_name.values().sum()
    }
}

impl fmt::Display for IoctlStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "ioctl count by kind")?;
        for (name, n) in &self.by_name {
            writeln!(f, "  {name:<32} {n:>10}")?;
        }
        for (name, n) in [
            ("mmap_read", self.mmap_reads),
            ("mmap_write", self.mmap_writes),
        ] {
            if n > 0 {
                writeln!(f, "  {name:<32} {n:>10}")?;
            }
        }
        writeln!(f, "  {:<32} {:>10}", "total", self.calls)?;
        write!(f, "  {:<32} {:>10}", "errors", self.errors)
    }
}

/// A transport wrapper that only counts calls.
#[derive(Debug)]
pub struct Counting<T> {
    inner: T,
    stats: IoctlStats,
}

impl<T> Counting<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            stats: IoctlStats::default(),
        }
    }

    /// The counts so far.
    pub fn stats(&self) -> &IoctlStats {
        &self.stats
    }

    /// The wrapped transport.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The wrapped transport, mutable.
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// The wrapped transport and the counts.
    pub fn into_parts(self) -> (T, IoctlStats) {
        (self.inner, self.stats)
    }
}

impl<T: Transport> Transport for Counting<T> {
    fn ioctl(
        &mut self,
        request: u32,
        arg: &mut [u8],
        user: &mut dyn UserMemory,
    ) -> Result<i64, IoctlError> {
        let r = self.inner.ioctl(request, arg, user);
        self.stats.count_ioctl(request, r.is_ok());
        r
    }

    fn mmap_read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoctlError> {
        let r = self.inner.mmap_read(offset, buf);
        self.stats.count_mmap_read(r.is_ok());
        r
    }

    fn mmap_write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), IoctlError> {
        let r = self.inner.mmap_write(offset, bytes);
        self.stats.count_mmap_write(r.is_ok());
        r
    }

    fn local_driver(&mut self) -> Option<&mut dyn std::any::Any> {
        self.inner.local_driver()
    }

    fn finish_writes(&mut self) -> Option<String> {
        self.inner.finish_writes()
    }
}
