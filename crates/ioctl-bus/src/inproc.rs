//! The in-process transport: the host calls the driver directly on its own
//! thread (tests, and runs that need no thread boundary).

use crate::{Driver, IoctlError, Transport, UserMemory};

/// A [`Transport`] that owns its driver and calls it in place.
#[derive(Debug)]
pub struct InProcess<D> {
    driver: D,
}

impl<D: Driver> InProcess<D> {
    /// Wraps `driver`.
    pub fn new(driver: D) -> Self {
        Self { driver }
    }

    /// The driver.
    pub fn driver(&self) -> &D {
        &self.driver
    }

    /// The driver, mutable.
    pub fn driver_mut(&mut self) -> &mut D {
        &mut self.driver
    }

    /// Gives the driver back.
    pub fn into_driver(self) -> D {
        self.driver
    }
}

impl<D: Driver + 'static> Transport for InProcess<D> {
    fn ioctl(
        &mut self,
        request: u32,
        arg: &mut [u8],
        user: &mut dyn UserMemory,
    ) -> Result<i64, IoctlError> {
        Ok(self.driver.ioctl(request, arg, user)?)
    }

    fn mmap_read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoctlError> {
        Ok(self.driver.mmap_read(offset, buf)?)
    }

    fn mmap_write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), IoctlError> {
        Ok(self.driver.mmap_write(offset, bytes)?)
    }

    fn local_driver(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(&mut self.driver)
    }

    fn try_clone_box(&mut self) -> Option<Box<dyn Transport>> {
        let driver = self.driver.try_clone_driver()?;
        Some(Box::new(InProcess { driver }))
    }
}
