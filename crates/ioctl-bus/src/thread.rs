//! The threaded transport: the driver runs on its own device thread and the
//! host talks to it over crossbeam channels (docs/references/design.md §3: the only threads
//! the simulator spawns).
//!
//! A call is a conversation. The host sends the request, then serves every
//! user-memory access the driver makes — each a round trip to the host
//! thread, as a kernel faulting on user pages — until the final reply. The
//! driver sees exactly the calls, argument bytes and user bytes it would
//! see through [`InProcess`](crate::InProcess).
//!
//! The driver is built on the device thread, so it need not be `Send`;
//! only [`Threaded::shutdown`], which hands it back, needs `D: Send`.
//! [`Threaded::with_driver`] runs a closure on the device thread instead.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};
use ioctl_abi::Errno;

use crate::{BusError, Driver, IoctlError, Transport, UserMemory, panic_message};

/// The watchdog a new [`Threaded`] starts with (host wall-clock).
pub const DEFAULT_WATCHDOG: Duration = Duration::from_secs(60);

type Inspect<D> = Box<dyn FnOnce(&mut D) + Send>;
type Handover<D> = Box<dyn FnOnce(D) + Send>;

/// Host → device.
enum ToDevice<D> {
    Ioctl {
        request: u32,
        arg: Vec<u8>,
    },
    MmapRead {
        offset: u64,
        buf: Vec<u8>,
    },
    MmapWrite {
        offset: u64,
        bytes: Vec<u8>,
    },
    /// Answer to [`ToHost::CopyFromUser`].
    FromUser(Result<Vec<u8>, Errno>),
    /// Answer to [`ToHost::CopyToUser`].
    ToUser(Result<(), Errno>),
    Inspect(Inspect<D>),
    Shutdown(Handover<D>),
}

/// Device → host.
enum ToHost {
    CopyFromUser {
        addr: u64,
        len: usize,
    },
    CopyToUser {
        addr: u64,
        bytes: Vec<u8>,
    },
    /// The call's result and its buffer (argument, read data, or the
    /// written bytes handed back for reuse).
    Done {
        ret: Result<i64, Errno>,
        buf: Vec<u8>,
    },
    Panicked(String),
}

/// The device end of a [`Threaded`] transport: serves calls against a
/// driver on whatever thread runs [`DevicePort::serve`].
pub struct DevicePort<D> {
    rx: Receiver<ToDevice<D>>,
    tx: Sender<ToHost>,
}

impl<D> fmt::Debug for DevicePort<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DevicePort").finish_non_exhaustive()
    }
}

impl<D: Driver> DevicePort<D> {
    /// Serves calls until the host shuts down, is dropped or the driver
    /// panics (the panic is caught and reported to the host). Returns the
    /// driver, unless [`Threaded::shutdown`] took it.
    pub fn serve(self, mut driver: D) -> Option<D> {
        while let Ok(msg) = self.rx.recv() {
            let reply = match msg {
                ToDevice::Ioctl { request, mut arg } => {
                    let mut user = HostUser { port: &self };
                    guarded(|| driver.ioctl(request, &mut arg, &mut user))
                        .map(|ret| ToHost::Done { ret, buf: arg })
                }
                ToDevice::MmapRead { offset, mut buf } => {
                    guarded(|| driver.mmap_read(offset, &mut buf)).map(|r| ToHost::Done {
                        ret: r.map(|()| 0),
                        buf,
                    })
                }
                ToDevice::MmapWrite { offset, bytes } => {
                    guarded(|| driver.mmap_write(offset, &bytes)).map(|r| ToHost::Done {
                        ret: r.map(|()| 0),
                        buf: bytes,
                    })
                }
                ToDevice::Inspect(f) => guarded(|| f(&mut driver)).map(|()| ToHost::Done {
                    ret: Ok(0),
                    buf: Vec::new(),
                }),
                ToDevice::Shutdown(handover) => {
                    handover(driver);
                    return None;
                }
                // Only sent in answer to a request; nothing is waiting.
                ToDevice::FromUser(_) | ToDevice::ToUser(_) => continue,
            };
            match reply {
                Ok(done) => {
                    if self.tx.send(done).is_err() {
                        break;
                    }
                }
                Err(msg) => {
                    let _ = self.tx.send(ToHost::Panicked(msg));
                    break;
                }
            }
        }
        Some(driver)
    }

    /// The driver could not be built: answers the host's next message with
    /// the panic.
    fn refuse(self, msg: String) {
        if let Ok(pending) = self.rx.recv() {
            let _ = self.tx.send(ToHost::Panicked(msg));
            drop(pending);
        }
    }
}

/// Runs `f`, turning a panic into its message.
fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| panic_message(&*p))
}

/// The caller's user memory seen from the device thread: every access is a
/// round trip to the host.
struct HostUser<'a, D> {
    port: &'a DevicePort<D>,
}

impl<D> UserMemory for HostUser<'_, D> {
    fn copy_from_user(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        let len = buf.len();
        self.port
            .tx
            .send(ToHost::CopyFromUser { addr, len })
            .map_err(|_| Errno::EFAULT)?;
        match self.port.rx.recv() {
            Ok(ToDevice::FromUser(Ok(bytes))) if bytes.len() == len => {
                buf.copy_from_slice(&bytes);
                Ok(())
            }
            Ok(ToDevice::FromUser(Err(e))) => Err(e),
            _ => Err(Errno::EFAULT),
        }
    }

    fn copy_to_user(&mut self, addr: u64, bytes: &[u8]) -> Result<(), Errno> {
        let bytes = bytes.to_vec();
        self.port
            .tx
            .send(ToHost::CopyToUser { addr, bytes })
            .map_err(|_| Errno::EFAULT)?;
        match self.port.rx.recv() {
            Ok(ToDevice::ToUser(r)) => r,
            _ => Err(Errno::EFAULT),
        }
    }
}

/// User memory for calls that have none (mmap, inspection).
struct NoUser;

impl UserMemory for NoUser {
    fn copy_from_user(&mut self, _addr: u64, _buf: &mut [u8]) -> Result<(), Errno> {
        Err(Errno::EFAULT)
    }

    fn copy_to_user(&mut self, _addr: u64, _bytes: &[u8]) -> Result<(), Errno> {
        Err(Errno::EFAULT)
    }
}

/// A [`Transport`] whose driver runs on a device thread.
///
/// Failures of the boundary are sticky: after a [`BusError`] every later
/// call returns the same error at once. Dropping the transport closes the
/// channels and joins the device thread — except after
/// [`BusError::Hung`], when the thread is left to finish on its own.
pub struct Threaded<D> {
    to_device: Sender<ToDevice<D>>,
    from_device: Receiver<ToHost>,
    device: Option<JoinHandle<()>>,
    watchdog: Duration,
    failed: Option<BusError>,
    /// The argument buffer, reused call after call.
    scratch: Vec<u8>,
}

impl<D> fmt::Debug for Threaded<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Threaded")
            .field("watchdog", &self.watchdog)
            .field("failed", &self.failed)
            .field("spawned", &self.device.is_some())
            .finish_non_exhaustive()
    }
}

impl<D: Driver + 'static> Threaded<D> {
    /// Starts a device thread (`neuron-device`) that builds the driver
    /// with `make_driver` and serves calls. A panic in `make_driver` is
    /// reported by the first call as [`BusError::DevicePanic`]; if the
    /// thread cannot be started, every call gives
    /// [`BusError::Disconnected`].
    pub fn spawn(make_driver: impl FnOnce() -> D + Send + 'static) -> Self {
        let (mut host, port) = Self::pair();
        let spawned = std::thread::Builder::new()
            .name("neuron-device".into())
            .spawn(move || match guarded(make_driver) {
                Ok(driver) => drop(port.serve(driver)),
                Err(msg) => port.refuse(msg),
            });
        match spawned {
            Ok(handle) => host.device = Some(handle),
            Err(_) => host.failed = Some(BusError::Disconnected),
        }
        host
    }
}

impl<D: Driver> Threaded<D> {
    /// A transport and its device end, for a caller that runs
    /// [`DevicePort::serve`] on a thread of its own (e.g. a scoped thread).
    #[must_use]
    pub fn pair() -> (Self, DevicePort<D>) {
        // Strict request/reply: never more than one message in flight.
        let (to_device, rx) = bounded(1);
        let (tx, from_device) = bounded(1);
        let host = Self {
            to_device,
            from_device,
            device: None,
            watchdog: DEFAULT_WATCHDOG,
            failed: None,
            scratch: Vec::new(),
        };
        (host, DevicePort { rx, tx })
    }

    /// Sets how long the host waits for each device message before the
    /// call fails with [`BusError::Hung`].
    #[must_use]
    pub fn with_watchdog(mut self, watchdog: Duration) -> Self {
        self.watchdog = watchdog;
        self
    }

    /// The watchdog.
    #[must_use]
    pub fn watchdog(&self) -> Duration {
        self.watchdog
    }

    /// The sticky boundary failure, if one happened.
    #[must_use]
    pub fn failure(&self) -> Option<&BusError> {
        self.failed.as_ref()
    }

    /// Runs `f` on the device thread with the driver, between calls, and
    /// returns its result (e.g. to read device state).
    ///
    /// # Errors
    ///
    /// A [`BusError`]; a panic in `f` is a [`BusError::DevicePanic`].
    pub fn with_driver<R: Send + 'static>(
        &mut self,
        f: impl FnOnce(&mut D) -> R + Send + 'static,
    ) -> Result<R, BusError> {
        let (tx, rx) = bounded(1);
        let inspect: Inspect<D> = Box::new(move |driver| {
            let _ = tx.send(f(driver));
        });
        let _done = self.converse(ToDevice::Inspect(inspect), &mut NoUser)?;
        rx.try_recv().map_err(|_| BusError::Disconnected)
    }

    /// Records a failure; every later call returns it.
    fn fail(&mut self, e: BusError) -> BusError {
        self.failed = Some(e.clone());
        e
    }

    /// The device end is gone: a panic it left behind, or disconnection.
    fn lost(&mut self) -> BusError {
        match self.from_device.try_recv() {
            Ok(ToHost::Panicked(msg)) => self.fail(BusError::DevicePanic(msg)),
            _ => self.fail(BusError::Disconnected),
        }
    }

    fn waited_ms(&self) -> u64 {
        u64::try_from(self.watchdog.as_millis()).unwrap_or(u64::MAX)
    }

    /// Sends `msg` and serves the driver's user-memory accesses from
    /// `user` until the reply.
    fn converse(
        &mut self,
        msg: ToDevice<D>,
        user: &mut dyn UserMemory,
    ) -> Result<(Result<i64, Errno>, Vec<u8>), BusError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.to_device.send(msg).is_err() {
            return Err(self.lost());
        }
        loop {
            let answer = match self.from_device.recv_timeout(self.watchdog) {
                Ok(ToHost::Done { ret, buf }) => return Ok((ret, buf)),
                Ok(ToHost::CopyFromUser { addr, len }) => {
                    let mut bytes = vec![0; len];
                    ToDevice::FromUser(user.copy_from_user(addr, &mut bytes).map(|()| bytes))
                }
                Ok(ToHost::CopyToUser { addr, bytes }) => {
                    ToDevice::ToUser(user.copy_to_user(addr, &bytes))
                }
                Ok(ToHost::Panicked(msg)) => return Err(self.fail(BusError::DevicePanic(msg))),
                Err(RecvTimeoutError::Timeout) => {
                    let waited_ms = self.waited_ms();
                    return Err(self.fail(BusError::Hung { waited_ms }));
                }
                Err(RecvTimeoutError::Disconnected) => return Err(self.lost()),
            };
            if self.to_device.send(answer).is_err() {
                return Err(self.lost());
            }
        }
    }
}

impl<D: Driver + Send + 'static> Threaded<D> {
    /// Stops the device thread and hands the driver back (to read final
    /// device state).
    ///
    /// # Errors
    ///
    /// The sticky failure if the bus had failed; [`BusError::Hung`] if the
    /// device does not answer within the watchdog.
    pub fn shutdown(mut self) -> Result<D, BusError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let (tx, rx) = bounded(1);
        let handover: Handover<D> = Box::new(move |driver| {
            let _ = tx.send(driver);
        });
        if self.to_device.send(ToDevice::Shutdown(handover)).is_err() {
            return Err(self.lost());
        }
        match rx.recv_timeout(self.watchdog) {
            Ok(driver) => {
                if let Some(handle) = self.device.take() {
                    let _ = handle.join();
                }
                Ok(driver)
            }
            Err(RecvTimeoutError::Timeout) => {
                let waited_ms = self.waited_ms();
                Err(self.fail(BusError::Hung { waited_ms }))
            }
            Err(RecvTimeoutError::Disconnected) => Err(self.lost()),
        }
    }
}

impl<D> Drop for Threaded<D> {
    fn drop(&mut self) {
        // Closing both channels ends the device loop wherever it waits.
        let (closed, _) = bounded(0);
        drop(std::mem::replace(&mut self.to_device, closed));
        self.from_device = crossbeam_channel::never();
        if let Some(handle) = self.device.take()
            && !matches!(self.failed, Some(BusError::Hung { .. }))
        {
            let _ = handle.join();
        }
    }
}

impl<D: Driver> Transport for Threaded<D> {
    fn ioctl(
        &mut self,
        request: u32,
        arg: &mut [u8],
        user: &mut dyn UserMemory,
    ) -> Result<i64, IoctlError> {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        buf.extend_from_slice(arg);
        let (ret, buf) = self.converse(ToDevice::Ioctl { request, arg: buf }, user)?;
        let n = arg.len().min(buf.len());
        arg[..n].copy_from_slice(&buf[..n]);
        self.scratch = buf;
        Ok(ret?)
    }

    fn mmap_read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoctlError> {
        let mut data = std::mem::take(&mut self.scratch);
        data.clear();
        data.extend_from_slice(buf); // the driver sees the caller's buffer

        let (ret, data) = self.converse(ToDevice::MmapRead { offset, buf: data }, &mut NoUser)?;
        let n = buf.len().min(data.len());
        buf[..n].copy_from_slice(&data[..n]);
        self.scratch = data;
        ret?;
        Ok(())
    }

    fn mmap_write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), IoctlError> {
        let mut data = std::mem::take(&mut self.scratch);
        data.clear();
        data.extend_from_slice(bytes);
        let (ret, data) = self.converse(
            ToDevice::MmapWrite {
                offset,
                bytes: data,
            },
            &mut NoUser,
        )?;
        self.scratch = data;
        ret?;
        Ok(())
    }
}
